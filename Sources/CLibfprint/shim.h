// SPDX-License-Identifier: Apache-2.0
// libfprint-2 and GLib for Swift. Only the FingerprintReader target imports this module.
// The helpers below stand in for C macros and untyped casts that Swift cannot express.
#pragma once
#include <fprint.h>
#include <gio/gio.h>

/// Callback shapes of the signals FingerprintReader connects to.
typedef void (*clibfprint_context_device_cb)(FpContext *context, FpDevice *device,
                                             gpointer user_data);
typedef void (*clibfprint_device_cb)(FpDevice *device, gpointer user_data);
typedef void (*clibfprint_notify_cb)(GObject *object, GParamSpec *pspec, gpointer user_data);

/// `g_signal_connect` for FpContext::device-added / device-removed (G_CALLBACK is a cast Swift
/// cannot write).
static inline gulong clibfprint_connect_context_device(FpContext *context, const gchar *signal,
                                                       clibfprint_context_device_cb callback,
                                                       gpointer user_data)
{
    return g_signal_connect_data(context, signal, G_CALLBACK(callback), user_data, NULL,
                                 (GConnectFlags)0);
}

/// `g_signal_connect` for FpDevice::removed.
static inline gulong clibfprint_connect_device(FpDevice *device, const gchar *signal,
                                               clibfprint_device_cb callback, gpointer user_data)
{
    return g_signal_connect_data(device, signal, G_CALLBACK(callback), user_data, NULL,
                                 (GConnectFlags)0);
}

/// `g_signal_connect` for a GObject `notify::property` signal.
static inline gulong clibfprint_connect_notify(gpointer object, const gchar *signal,
                                               clibfprint_notify_cb callback, gpointer user_data)
{
    return g_signal_connect_data(object, signal, G_CALLBACK(callback), user_data, NULL,
                                 (GConnectFlags)0);
}

/// `g_signal_handlers_disconnect_by_data` (a macro).
static inline guint clibfprint_disconnect_by_data(gpointer instance, gpointer user_data)
{
    return g_signal_handlers_disconnect_matched(instance, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL,
                                                user_data);
}

/// `g_ptr_array_index` (a macro).
static inline gpointer clibfprint_ptr_array_index(GPtrArray *array, guint index)
{
    return g_ptr_array_index(array, index);
}

/// `G_IO_ERROR`, `FP_DEVICE_ERROR`, `FP_DEVICE_RETRY` (macros over the quark functions).
static inline GQuark clibfprint_io_error_quark(void)
{
    return G_IO_ERROR;
}
static inline GQuark clibfprint_device_error_quark(void)
{
    return FP_DEVICE_ERROR;
}
static inline GQuark clibfprint_device_retry_quark(void)
{
    return FP_DEVICE_RETRY;
}
