// SPDX-License-Identifier: Apache-2.0
// The one file through which every libfprint and GLib call passes (docs/adr/0001-reader-threading.md).
//
// Threading rule for everything below: a C pointer is dereferenced only on the GLib thread. The two exceptions are
// thread-safe by GLib's contract: posting work (`g_source_attach`) and cancelling (`g_cancellable_cancel`).

import CLibfprint
import Glibc
import LocalAuthProtocol
import Synchronization

// MARK: - The GLib thread

/// A closure posted to the GLib thread, boxed so it can travel through a `gpointer`.
private final class PostedWork {
    let body: () -> Void
    let thread: GLibThread
    init(_ body: @escaping () -> Void, on thread: GLibThread) {
        self.body = body
        self.thread = thread
    }
}

/// The dedicated thread that runs `g_main_loop_run` on GLib's global default main context.
///
/// It must be the global default context: `fp_context_enumerate` iterates that context itself, so a private context
/// pushed as thread-default deadlocks. It must be one thread: libfprint is not thread-safe.
final class GLibThread: @unchecked Sendable {
    // `GMainLoop *`, used only on the GLib thread.
    private let loop: OpaquePointer
    // `GThread *`, taken by `stop()`.
    private let thread: Mutex<UnsafeMutablePointer<GThread>?>
    // Used only on the GLib thread: how deep it is inside `exclusively`, and the work posted meanwhile.
    private var exclusiveDepth = 0
    private var deferred: [PostedWork] = []

    /// Wraps `g_main_loop_new(NULL, FALSE)` and `g_thread_new`, whose thread calls `g_main_loop_run`.
    init() {
        loop = g_main_loop_new(nil, 0)
        // g_thread_new aborts the process if it cannot create a thread; there is no reader without it anyway.
        let handle = g_thread_new(
            "localauth-glib",
            { argument in
                g_main_loop_run(OpaquePointer(argument!))
                return nil
            }, UnsafeMutableRawPointer(loop))
        thread = Mutex(handle)
    }

    /// Posts `body` to the GLib thread with `g_idle_source_new` + `g_source_attach` (never `g_main_context_invoke`,
    /// which may run inline on the caller's thread).
    func post(_ body: @escaping @Sendable () -> Void) {
        let work = Unmanaged.passRetained(PostedWork(body, on: self)).toOpaque()
        let source = g_idle_source_new()
        // Default rather than idle priority, so reader requests are not starved by libfprint's own busy sources.
        g_source_set_priority(source, G_PRIORITY_DEFAULT)
        g_source_set_callback(
            source,
            { data in
                let work = Unmanaged<PostedWork>.fromOpaque(data!).takeUnretainedValue()
                work.thread.runOrDefer(work)
                return 0  // G_SOURCE_REMOVE: run once
            }, work, { data in Unmanaged<PostedWork>.fromOpaque(data!).release() })
        g_source_attach(source, nil)
        g_source_unref(source)
    }

    /// On the GLib thread: runs `body`, and any work posted while it runs waits until it returns.
    ///
    /// For libfprint calls that iterate the main context themselves (`fp_context_enumerate`): without
    /// this, work posted meanwhile runs nested inside that call — a `close()` there unreferenced the very
    /// `FpContext` being enumerated, and the daemon died of SIGILL on the next line (seen as the
    /// "SIGILL exit-test" flake of `lookForReadersIfNone_afterUnplug…`, 8 of 25 loaded runs).
    func exclusively(_ body: () -> Void) {
        exclusiveDepth += 1
        body()
        exclusiveDepth -= 1
        guard exclusiveDepth == 0 else { return }
        while !deferred.isEmpty {
            deferred.removeFirst().body()
        }
    }

    /// Runs the main context `times` times without blocking, as `fp_context_enumerate` does; for tests of
    /// `exclusively` (no test may import CLibfprint).
    func iterateMainContext(times: Int) {
        for _ in 0..<times { g_main_context_iteration(nil, 0) }
    }

    private func runOrDefer(_ work: PostedWork) {
        if exclusiveDepth > 0 { deferred.append(work) } else { work.body() }
    }

    /// Runs `body` on the GLib thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            post { continuation.resume(returning: body()) }
        }
    }

    /// Wraps `g_main_loop_quit` and `g_thread_join`. Never call it from the GLib thread.
    func stop() {
        let taken = thread.withLock { value in
            defer { value = nil }
            return value
        }
        guard let handle = taken else { return }
        // Posted rather than called here: a quit that came before g_main_loop_run started would be lost.
        post { [self] in g_main_loop_quit(loop) }
        g_thread_join(handle)
        g_main_loop_unref(loop)
    }
}

// MARK: - Errors: the one place a GError becomes a Swift error

/// Converts a `GError` into a `ReaderFailure` and frees it (`g_error_free`). The only function that maps libfprint's
/// and GIO's error codes: `FP_DEVICE_ERROR_REMOVED` `.removed`, `_BUSY` `.busy` (not expected: operations are
/// queued), `_NOT_SUPPORTED` `.notSupported`, `_DATA_INVALID` `.dataInvalid` (a print that is not a valid
/// serialised print or belongs to another reader), `_DATA_NOT_FOUND` `.dataNotFound`, `_DATA_FULL`
/// `.dataFull`, `_PROTO` `.communication`, `G_IO_ERROR_CANCELLED` `.cancelled` (the caller's task was
/// cancelled, in the queue or during the operation); anything else, and a nil error (a C API that failed
/// without saying why), `.other` with GError's message.
private func readerError(consuming error: UnsafeMutablePointer<GError>?) -> ReaderFailure {
    guard let error else { return .other("libfprint reported a failure without an error") }
    defer { g_error_free(error) }
    let domain = error.pointee.domain
    let code = error.pointee.code
    let message = error.pointee.message.map { String(cString: $0) } ?? "unknown error"
    if domain == clibfprint_device_error_quark() {
        switch FpDeviceError(rawValue: UInt32(code)) {
        case FP_DEVICE_ERROR_REMOVED: return .removed
        case FP_DEVICE_ERROR_BUSY: return .busy
        case FP_DEVICE_ERROR_NOT_SUPPORTED: return .notSupported
        case FP_DEVICE_ERROR_DATA_INVALID: return .dataInvalid
        case FP_DEVICE_ERROR_DATA_NOT_FOUND: return .dataNotFound
        case FP_DEVICE_ERROR_DATA_FULL: return .dataFull
        case FP_DEVICE_ERROR_PROTO: return .communication
        default: return .other(message)  // GENERAL, NOT_OPEN, ALREADY_OPEN, DATA_DUPLICATE, TOO_HOT
        }
    }
    if domain == clibfprint_io_error_quark() {
        switch GIOErrorEnum(rawValue: UInt32(code)) {
        case G_IO_ERROR_CANCELLED: return .cancelled
        case G_IO_ERROR_NOT_SUPPORTED: return .notSupported
        case G_IO_ERROR_INVALID_DATA: return .dataInvalid  // what fp_print_deserialize reports for bad bytes
        default: return .other(message)
        }
    }
    return .other(message)
}

/// Maps an `FP_DEVICE_RETRY` error from a progress or match callback to a hint (`_GENERAL`: poor scan
/// quality; `_TOO_SHORT`: the swipe was too short; `_CENTER_FINGER`: the finger was not centred;
/// `_REMOVE_FINGER`: lift the finger and try again); nil for any other error. The error is borrowed
/// (libfprint passes it transfer-none).
private func readerRetry(_ error: UnsafeMutablePointer<GError>) -> RetryHint? {
    guard error.pointee.domain == clibfprint_device_retry_quark() else { return nil }
    switch FpDeviceRetry(rawValue: UInt32(error.pointee.code)) {
    case FP_DEVICE_RETRY_TOO_SHORT: return .tooShort
    case FP_DEVICE_RETRY_CENTER_FINGER: return .centerFinger
    case FP_DEVICE_RETRY_REMOVE_FINGER: return .removeFinger
    default: return .general
    }
}

/// How a verify or identify ended: with an answer, or with a bad scan that libfprint reports as the operation's
/// error (its match callback already carried the hint) and that the caller answers by scanning again.
enum ScanResult<Value: Sendable>: Sendable {
    case completed(Value)
    case retry
}

/// The failure of a verify or identify: a retry error (`FP_DEVICE_RETRY`) becomes `.retry`, anything else goes to
/// `readerError(consuming:)`.
private func scanFailure<Value>(consuming error: UnsafeMutablePointer<GError>?) -> Result<
    ScanResult<Value>, ReaderFailure
> {
    if let error, error.pointee.domain == clibfprint_device_retry_quark() {
        g_error_free(error)
        return .success(.retry)
    }
    return .failure(readerError(consuming: error))
}

// MARK: - One asynchronous libfprint call

/// One asynchronous libfprint call in flight: its `GCancellable`, its progress sink and its completion.
/// Everything but `cancel()` runs on the GLib thread.
private final class AsyncCall: @unchecked Sendable {
    let cancellable: UnsafeMutablePointer<GCancellable>
    let progress: (@Sendable (ReaderProgress) -> Void)?
    /// The device's enrol stage count, so stage progress can say "n of m".
    var stages = 0
    /// Cancelled because the device went away, not by the caller.
    var cancelledByRemoval = false
    /// An identify's gallery, to tell which print the match callback names (empty for a verify).
    var gallery: [OpaquePointer] = []
    /// Reads the `GAsyncResult`; set by the operation before it calls libfprint, cleared once it ran.
    var onReady: ((OpaquePointer?) -> Void)?

    /// Wraps `g_cancellable_new`.
    init(progress: (@Sendable (ReaderProgress) -> Void)?) {
        cancellable = g_cancellable_new()
        self.progress = progress
    }

    deinit { g_object_unref(cancellable) }

    /// Wraps `g_cancellable_cancel`; safe from any thread, as Swift's cancellation handlers need.
    func cancel() { g_cancellable_cancel(cancellable) }

    /// A +1 reference for a C `user_data`; balanced by `asyncReady` or `releaseCall`.
    var retained: UnsafeMutableRawPointer { Unmanaged.passRetained(self).toOpaque() }
}

/// `GAsyncReadyCallback` for every call: hands the result to the call's completion exactly once.
private let asyncReady: GAsyncReadyCallback = { _, result, data in
    let call = Unmanaged<AsyncCall>.fromOpaque(data!).takeRetainedValue()
    let ready = call.onReady
    call.onReady = nil
    ready?(result)
}

/// `GDestroyNotify` for the progress `user_data` of enrol, verify and identify.
private let releaseCall: GDestroyNotify = { data in Unmanaged<AsyncCall>.fromOpaque(data!).release() }

/// `FpEnrollProgress`: a completed stage, or a retry hint when `error` is set.
/// The stage count is read at each stage (`fp_device_get_nr_enroll_stages`): a driver may change it
/// while an enrolment runs (libfprint's virtual devices do on SET_ENROLL_STAGES).
private let enrollProgress: FpEnrollProgress = { device, completed, _, data, error in
    let call = Unmanaged<AsyncCall>.fromOpaque(data!).takeUnretainedValue()
    if let error {
        if let retry = readerRetry(error) { call.progress?(.retry(retry)) }
    } else {
        let stages = device.map { Int(fp_device_get_nr_enroll_stages($0)) } ?? call.stages
        call.progress?(.enrollStage(done: Int(completed), of: stages))
    }
}

/// `FpMatchCb`: a retry hint, or the answer as soon as libfprint knows it (the finish call may come
/// later: a reader can wait for the finger to be lifted first).
private let matchProgress: FpMatchCb = { _, match, _, data, error in
    let call = Unmanaged<AsyncCall>.fromOpaque(data!).takeUnretainedValue()
    if let error {
        if let retry = readerRetry(error) { call.progress?(.retry(retry)) }
        return
    }
    guard let match else { return call.progress?(.matched(index: nil)) ?? () }
    if call.gallery.isEmpty { return call.progress?(.matched(index: 0)) ?? () }
    // libfprint names the gallery's own object; fp_print_equal covers a driver that copies it.
    let index = call.gallery.firstIndex(of: match) ?? call.gallery.firstIndex { fp_print_equal($0, match) != 0 }
    call.progress?(.matched(index: index))
}

/// `GDestroyNotify` that drops a GObject reference (`g_object_unref`), for `GPtrArray`s of prints.
private let unrefObject: GDestroyNotify = { object in g_object_unref(object) }

// MARK: - Prints

/// Wraps `fp_print_serialize`: the bytes the store keeps.
private func serialize(_ print: OpaquePointer) -> Result<[UInt8], ReaderFailure> {
    var data: UnsafeMutablePointer<guchar>?
    var length: gsize = 0
    var error: UnsafeMutablePointer<GError>?
    guard fp_print_serialize(print, &data, &length, &error) != 0, let data else {
        return .failure(readerError(consuming: error))
    }
    defer { g_free(data) }
    return .success(Array(UnsafeBufferPointer(start: data, count: Int(length))))
}

/// Whether `bytes` are a print libfprint can deserialise without aborting the process.
///
/// `fp_print_deserialize` (libfprint 1.94) checks the outer GVariant, but then reads the print's
/// payload with `g_variant_get_child_value`, which calls `g_error` (abort) on a payload of the wrong
/// shape: a truncated or damaged file takes the daemon down. So the bytes are checked first, with
/// GLib's own untrusted-data functions: the "FP3" magic, a GVariant of libfprint's print type in
/// normal form (`g_variant_is_normal_form` checks every nested value), and a payload of the type
/// `fp_print_serialize` writes: a variant for a raw print (type 1), `(a(aiaiai))` for an image
/// print (NBIS, type 2).
func isWellFormedPrint(_ bytes: [UInt8]) -> Bool {
    guard bytes.count > 3, bytes[0] == 0x46, bytes[1] == 0x50, bytes[2] == 0x33 else { return false }
    let type = g_variant_type_new("(issbymsmsia{sv}v)")
    defer { g_variant_type_free(type) }
    // A copy of our own: GVariant needs aligned memory, and the variant must not outlive it.
    let body = Array(bytes[3...])
    return body.withUnsafeBytes { buffer -> Bool in
        guard let outer = g_variant_new_from_data(type, buffer.baseAddress, gsize(buffer.count), 0, nil, nil) else {
            return false
        }
        g_variant_ref_sink(outer)
        defer { g_variant_unref(outer) }
        guard g_variant_is_normal_form(outer) != 0, g_variant_n_children(outer) == 10 else { return false }
        let kind = g_variant_get_child_value(outer, 0)
        let boxed = g_variant_get_child_value(outer, 9)
        defer {
            g_variant_unref(kind)
            g_variant_unref(boxed)
        }
        let payload = g_variant_get_variant(boxed)
        defer { g_variant_unref(payload) }
        let payloadType = String(cString: g_variant_get_type_string(payload))
        switch g_variant_get_int32(kind) {
        case 1: return payloadType == "v"  // FPI_PRINT_RAW
        case 2: return payloadType == "(a(aiaiai))"  // FPI_PRINT_NBIS
        default: return false
        }
    }
}

/// Wraps `fp_print_deserialize` and `fp_print_compatible`; returns a full reference the caller must unref.
/// A print made by another reader is refused as `.dataInvalid`, so it is never offered to this one.
private func deserialize(_ bytes: [UInt8], for device: UnsafeMutablePointer<FpDevice>) -> Result<
    OpaquePointer, ReaderFailure
> {
    // fp_print_deserialize aborts the process on fewer than 4 bytes and on a damaged payload.
    guard isWellFormedPrint(bytes) else { return .failure(.dataInvalid) }
    var error: UnsafeMutablePointer<GError>?
    let print = bytes.withUnsafeBufferPointer { buffer in
        fp_print_deserialize(buffer.baseAddress, gsize(buffer.count), &error)
    }
    guard let print else { return .failure(readerError(consuming: error)) }
    guard fp_print_compatible(print, device) != 0 else {
        g_object_unref(UnsafeMutableRawPointer(print))
        return .failure(.dataInvalid)
    }
    return .success(print)
}

/// Wraps `fp_print_deserialize` and the `fp_print_get_*` getters: what a serialised print says
/// about itself, without any reader. GLib thread.
func describe(_ bytes: [UInt8]) -> Result<PrintFacts, ReaderFailure> {
    guard isWellFormedPrint(bytes) else { return .failure(.dataInvalid) }
    var error: UnsafeMutablePointer<GError>?
    let print = bytes.withUnsafeBufferPointer { buffer in
        fp_print_deserialize(buffer.baseAddress, gsize(buffer.count), &error)
    }
    guard let print else { return .failure(readerError(consuming: error)) }
    defer { g_object_unref(UnsafeMutableRawPointer(print)) }
    func text(_ value: UnsafePointer<gchar>?) -> String? { value.map { String(cString: $0) } }
    return .success(
        PrintFacts(
            driver: text(fp_print_get_driver(print)) ?? "", deviceID: text(fp_print_get_device_id(print)) ?? "",
            finger: Int(fp_print_get_finger(print).rawValue), username: text(fp_print_get_username(print))))
}

// MARK: - Devices

/// What libfprint says about a device, read once on the GLib thread when it appears.
struct FprintDeviceFacts: Sendable, Equatable {
    var deviceID: String
    var name: String
    var driver: String
    var enrollStages: Int
    var supportsIdentify: Bool
    var hasStorage: Bool
    var isSwipe: Bool
}

/// One libfprint `FpDevice`, with a reference held until the context reports it gone; every method posts to the
/// GLib thread and awaits the asynchronous libfprint API. Callers serialise operations (libfprint answers a second
/// concurrent one with BUSY).
final class LibfprintDevice: @unchecked Sendable {
    let facts: FprintDeviceFacts
    private let thread: GLibThread
    // GLib-thread-only state.
    private var device: UnsafeMutablePointer<FpDevice>?
    private var current: AsyncCall?
    private var unplugged = false
    private var cancelling = false
    private var fingerNeeded = false
    private var fingerPresent = false
    /// `notify::removed` came (the device is gone), readable from any thread: a removed reader is no
    /// longer listed, though its slot stays until its operation ends and the context drops it.
    private let gone = Atomic<Bool>(false)
    var isGone: Bool { gone.load(ordering: .acquiring) }
    /// What libfprint's signals call on the GLib thread (`DeviceHandlerSlots`).
    private let handlers = DeviceHandlerSlots()

    /// Wraps `g_object_ref` and the `fp_device_get_*` getters; GLib thread only.
    fileprivate init(_ device: UnsafeMutablePointer<FpDevice>, thread: GLibThread) {
        g_object_ref(device)
        self.device = device
        self.thread = thread
        let features = fp_device_get_features(device)
        facts = FprintDeviceFacts(
            deviceID: String(cString: fp_device_get_device_id(device)),
            name: String(cString: fp_device_get_name(device)),
            driver: String(cString: fp_device_get_driver(device)),
            enrollStages: Int(fp_device_get_nr_enroll_stages(device)),
            supportsIdentify: features.rawValue & FP_DEVICE_FEATURE_IDENTIFY.rawValue != 0,
            hasStorage: features.rawValue & FP_DEVICE_FEATURE_STORAGE.rawValue != 0,
            isSwipe: fp_device_get_scan_type(device) == FP_SCAN_TYPE_SWIPE)
        let me = Unmanaged.passUnretained(self).toOpaque()
        // notify::removed fires the moment the device goes; FpDevice::removed only after the pending operation ended.
        clibfprint_connect_notify(
            device, "notify::removed",
            { _, _, data in Unmanaged<LibfprintDevice>.fromOpaque(data!).takeUnretainedValue().deviceWentAway() }, me)
        clibfprint_connect_device(
            device, "removed",
            { _, data in Unmanaged<LibfprintDevice>.fromOpaque(data!).takeUnretainedValue().deviceRemovedSignal() }, me)
        clibfprint_connect_notify(
            device, "notify::finger-status",
            { _, _, data in Unmanaged<LibfprintDevice>.fromOpaque(data!).takeUnretainedValue().fingerStatusChanged() },
            me)
        clibfprint_connect_notify(
            device, "notify::nr-enroll-stages",
            { _, _, data in Unmanaged<LibfprintDevice>.fromOpaque(data!).takeUnretainedValue().reportStatus() }, me)
        clibfprint_connect_notify(
            device, "notify::scan-type",
            { _, _, data in Unmanaged<LibfprintDevice>.fromOpaque(data!).takeUnretainedValue().reportStatus() }, me)
    }

    /// Sets the closure told of finger-status and stage-count changes.
    func onStatus(_ handler: @escaping @Sendable (Bool, Bool, Int, Bool) -> Void) {
        handlers.setStatus(handler)
    }

    /// Wraps `fp_device_get_finger_status` and `fp_device_get_nr_enroll_stages` for the status handler.
    private func reportStatus() {
        guard let device, let handler = handlers.status else { return }
        let status = fp_device_get_finger_status(device).rawValue
        handler(
            status & FP_FINGER_STATUS_PRESENT.rawValue != 0, status & FP_FINGER_STATUS_NEEDED.rawValue != 0,
            Int(fp_device_get_nr_enroll_stages(device)), fp_device_get_scan_type(device) == FP_SCAN_TYPE_SWIPE)
    }

    /// Sets the closure run when libfprint reports the device removed.
    func onRemoved(_ handler: @escaping @Sendable () -> Void) {
        handlers.setRemoved(handler)
    }

    /// A removed device's current operation would otherwise wait for a finger forever (virtual readers never fail a
    /// pending scan): cancel it; `perform` reports that cancellation as `.removed`.
    private func deviceWentAway() {
        gone.store(true, ordering: .releasing)
        unplugged = true
        current?.cancelledByRemoval = true
        current?.cancel()
    }

    private func deviceRemovedSignal() {
        let handler = handlers.removed
        handler?()
    }

    /// Wraps `fp_device_get_finger_status`; reports "place a finger" when the reader starts waiting for one,
    /// and the touch when a finger comes onto the sensor.
    private func fingerStatusChanged() {
        guard let device else { return }
        let status = fp_device_get_finger_status(device).rawValue
        let needed = status & FP_FINGER_STATUS_NEEDED.rawValue != 0
        let present = status & FP_FINGER_STATUS_PRESENT.rawValue != 0
        if needed && !fingerNeeded { current?.progress?(.fingerNeeded) }
        if present && !fingerPresent { current?.progress?(.fingerPresent) }
        fingerNeeded = needed
        fingerPresent = present
        reportStatus()
    }

    /// Drops the signal handlers and the reference (`g_signal_handlers_disconnect_by_data`, `g_object_unref`);
    /// GLib thread only. Later operations fail with `.noDevice`.
    fileprivate func release() {
        guard let device else { return }
        disconnectAndUnref(device, from: self)
        self.device = nil
    }

    fileprivate var pointer: UnsafeMutablePointer<FpDevice>? { device }

    /// Runs one asynchronous libfprint call: posts `start` to the GLib thread with a fresh `GCancellable`, and
    /// cancels that cancellable (`g_cancellable_cancel`) when the calling Swift task is cancelled.
    ///
    /// `tracked`: the call is the device's current operation (the one cancelled on removal and told that a finger is
    /// needed). Suspend and resume run beside a queued operation, so they are not.
    private func perform<T: Sendable>(
        tracked: Bool = true,
        progress: (@Sendable (ReaderProgress) -> Void)? = nil,
        _ start:
            @escaping @Sendable (
                _ device: UnsafeMutablePointer<FpDevice>, _ call: AsyncCall,
                _ done: @escaping @Sendable (Result<T, ReaderFailure>) -> Void
            ) -> Void
    ) async -> Result<T, ReaderFailure> {
        let call = AsyncCall(progress: progress)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, ReaderFailure>, Never>) in
                thread.post { [self] in
                    guard let device else {
                        continuation.resume(returning: .failure(.noDevice))
                        return
                    }
                    if tracked {
                        current = call
                        fingerNeeded = false
                        fingerPresent = false
                    }
                    start(device, call) { [self] result in
                        if tracked && current === call { current = nil }
                        // GTask reports any operation whose cancellable was cancelled as CANCELLED, also the one
                        // we cancelled because the device went away: the caller must learn the device is gone.
                        if case .failure(.cancelled) = result, call.cancelledByRemoval {
                            continuation.resume(returning: .failure(.removed))
                        } else {
                            continuation.resume(returning: result)
                        }
                    }
                    if unplugged { call.cancelledByRemoval = true }
                    if unplugged || cancelling { call.cancel() }
                }
            }
        } onCancel: { [thread] in
            // On the GLib thread, between libfprint's callbacks: a driver reads its cancellable's
            // state in the middle of one (virtual_device asserts in should_wait_to_sleep when the
            // flag flips there from another thread), so it must never change under its feet.
            thread.post { call.cancel() }
        }
    }

    /// Wraps `fp_device_open` / `fp_device_open_finish`. Succeeds whenever the device ends up open
    /// (`fp_device_is_open`): GTask reports an open whose cancellable was cancelled as CANCELLED even
    /// when the driver finished opening, and the next open would then fail with "already open".
    func open() async -> Result<Void, ReaderFailure> {
        await perform { device, call, done in
            call.onReady = { result in
                var error: UnsafeMutablePointer<GError>?
                let ok = fp_device_open_finish(device, result, &error) != 0
                if !ok && fp_device_is_open(device) != 0 {
                    g_clear_error(&error)
                    done(.success(()))
                    return
                }
                done(ok ? .success(()) : .failure(readerError(consuming: error)))
            }
            fp_device_open(device, call.cancellable, asyncReady, call.retained)
        }
    }

    /// Wraps `fp_device_close` / `fp_device_close_finish`. Not cancellable: a half-closed reader is worse than a wait.
    func close() async -> Result<Void, ReaderFailure> {
        await perform { device, call, done in
            call.onReady = { result in
                var error: UnsafeMutablePointer<GError>?
                let ok = fp_device_close_finish(device, result, &error) != 0
                done(ok ? .success(()) : .failure(readerError(consuming: error)))
            }
            fp_device_close(device, nil, asyncReady, call.retained)
        }
    }

    /// Wraps `fp_device_suspend` / `fp_device_suspend_finish`.
    func suspend() async -> Result<Void, ReaderFailure> {
        await performBeside(fp_device_suspend, finish: fp_device_suspend_finish)
    }

    /// Wraps `fp_device_resume` / `fp_device_resume_finish`.
    func resume() async -> Result<Void, ReaderFailure> {
        await performBeside(fp_device_resume, finish: fp_device_resume_finish)
    }

    /// Runs a libfprint call that only succeeds or fails, with its `_finish`, beside a queued
    /// operation (untracked: suspend and resume).
    private func performBeside(
        _ start:
            @escaping @Sendable (
                UnsafeMutablePointer<FpDevice>?, UnsafeMutablePointer<GCancellable>?, GAsyncReadyCallback?, gpointer?
            ) -> Void,
        finish:
            @escaping @Sendable (
                UnsafeMutablePointer<FpDevice>?, OpaquePointer?, UnsafeMutablePointer<UnsafeMutablePointer<GError>?>?
            ) -> gboolean
    ) async -> Result<Void, ReaderFailure> {
        await perform(tracked: false) { device, call, done in
            call.onReady = { result in
                var error: UnsafeMutablePointer<GError>?
                let ok = finish(device, result, &error) != 0
                done(ok ? .success(()) : .failure(readerError(consuming: error)))
            }
            start(device, call.cancellable, asyncReady, call.retained)
        }
    }

    /// Wraps `fp_print_new` (floating, handed straight to enrol), `fp_print_set_finger`, `fp_print_set_username`,
    /// `fp_print_set_enroll_date`, `fp_device_enroll` / `fp_device_enroll_finish` and `fp_print_serialize`.
    func enroll(finger: Int, username: String, progress: @escaping @Sendable (ReaderProgress) -> Void) async -> Result<
        [UInt8], ReaderFailure
    > {
        await perform(progress: progress) { device, call, done in
            guard (Int(FP_FINGER_FIRST.rawValue)...Int(FP_FINGER_LAST.rawValue)).contains(finger) else {
                done(.failure(.dataInvalid))
                return
            }
            call.stages = Int(fp_device_get_nr_enroll_stages(device))
            let template = fp_print_new(device)
            fp_print_set_finger(template, FpFinger(rawValue: UInt32(finger)))
            fp_print_set_username(template, username)
            let today = g_date_new()
            g_date_set_time_t(today, time(nil))
            fp_print_set_enroll_date(template, today)
            g_date_free(today)
            call.onReady = { result in
                var error: UnsafeMutablePointer<GError>?
                guard let print = fp_device_enroll_finish(device, result, &error) else {
                    done(.failure(readerError(consuming: error)))
                    return
                }
                defer { g_object_unref(UnsafeMutableRawPointer(print)) }
                done(serialize(print))
            }
            fp_device_enroll(
                device, template, call.cancellable, enrollProgress, call.retained, releaseCall, asyncReady,
                call.retained)
        }
    }

    /// Wraps `fp_print_deserialize`, `fp_device_verify` / `fp_device_verify_finish`; true for a match.
    func verify(print bytes: [UInt8], progress: @escaping @Sendable (ReaderProgress) -> Void) async -> Result<
        ScanResult<Bool>, ReaderFailure
    > {
        await perform(progress: progress) { device, call, done in
            let print: OpaquePointer
            switch deserialize(bytes, for: device) {
            case .failure(let error): return done(.failure(error))
            case .success(let value): print = value
            }
            call.onReady = { result in
                var matched: gboolean = 0
                var error: UnsafeMutablePointer<GError>?
                if fp_device_verify_finish(device, result, &matched, nil, &error) != 0 {
                    done(.success(.completed(matched != 0)))
                } else {
                    done(scanFailure(consuming: error))
                }
            }
            fp_device_verify(
                device, print, call.cancellable, matchProgress, call.retained, releaseCall, asyncReady, call.retained)
            // fp_device_verify holds its own reference for as long as it needs the print.
            g_object_unref(UnsafeMutableRawPointer(print))
        }
    }

    /// Wraps `fp_device_identify` / `fp_device_identify_finish`; the index in `prints` of the match, nil for none.
    func identify(prints: [[UInt8]], progress: @escaping @Sendable (ReaderProgress) -> Void) async -> Result<
        ScanResult<Int?>, ReaderFailure
    > {
        await perform(progress: progress) { device, call, done in
            let gallery = g_ptr_array_new_with_free_func(unrefObject)!
            var members: [OpaquePointer] = []
            for bytes in prints {
                switch deserialize(bytes, for: device) {
                case .failure(let error):
                    g_ptr_array_unref(gallery)
                    return done(.failure(error))
                case .success(let print):
                    members.append(print)
                    g_ptr_array_add(gallery, UnsafeMutableRawPointer(print))
                }
            }
            call.gallery = members
            call.onReady = { [members] result in
                defer { g_ptr_array_unref(gallery) }
                var match: OpaquePointer?
                var error: UnsafeMutablePointer<GError>?
                guard fp_device_identify_finish(device, result, &match, nil, &error) != 0 else {
                    done(scanFailure(consuming: error))
                    return
                }
                guard let match else { return done(.success(.completed(nil))) }
                defer { g_object_unref(UnsafeMutableRawPointer(match)) }
                // libfprint hands back the gallery's own object; fp_print_equal covers a driver that copies it.
                let index = members.firstIndex(of: match) ?? members.firstIndex { fp_print_equal($0, match) != 0 }
                done(.success(.completed(index)))
            }
            fp_device_identify(
                device, gallery, call.cancellable, matchProgress, call.retained, releaseCall, asyncReady,
                call.retained)
        }
    }

    /// Wraps `fp_device_list_prints` / `fp_device_list_prints_finish`; each print serialised.
    func listPrints() async -> Result<[[UInt8]], ReaderFailure> {
        await perform { device, call, done in
            call.onReady = { result in
                var error: UnsafeMutablePointer<GError>?
                guard let prints = fp_device_list_prints_finish(device, result, &error) else {
                    done(.failure(readerError(consuming: error)))
                    return
                }
                defer { g_ptr_array_unref(prints) }
                var serialised: [[UInt8]] = []
                for index in 0..<prints.pointee.len {
                    let print = OpaquePointer(clibfprint_ptr_array_index(prints, index)!)
                    switch serialize(print) {
                    case .success(let bytes): serialised.append(bytes)
                    case .failure(let error): return done(.failure(error))
                    }
                }
                done(.success(serialised))
            }
            fp_device_list_prints(device, call.cancellable, asyncReady, call.retained)
        }
    }

    /// Wraps `fp_print_deserialize`, `fp_device_delete_print` / `fp_device_delete_print_finish`.
    func deletePrint(_ bytes: [UInt8]) async -> Result<Void, ReaderFailure> {
        await perform { device, call, done in
            let print: OpaquePointer
            switch deserialize(bytes, for: device) {
            case .failure(let error): return done(.failure(error))
            case .success(let value): print = value
            }
            call.onReady = { result in
                var error: UnsafeMutablePointer<GError>?
                let ok = fp_device_delete_print_finish(device, result, &error) != 0
                done(ok ? .success(()) : .failure(readerError(consuming: error)))
            }
            fp_device_delete_print(device, print, call.cancellable, asyncReady, call.retained)
            g_object_unref(UnsafeMutableRawPointer(print))
        }
    }

    /// Cancels what runs on the device now and everything started later (`g_cancellable_cancel`); for shutdown.
    func cancelAll() async {
        await thread.run { [self] in
            cancelling = true
            current?.cancel()
        }
    }
}

// MARK: - The context

/// A device appearing or going, as libfprint's `FpContext` reports it.
enum FprintContextEvent: Sendable {
    case added(LibfprintDevice)
    case removed(LibfprintDevice)
}

/// The process's one libfprint `FpContext`, created, enumerated and listened to on the GLib thread.
final class FprintContext: @unchecked Sendable {
    private let thread: GLibThread
    private let events: @Sendable (FprintContextEvent) -> Void
    // GLib-thread-only state.
    private var context: UnsafeMutablePointer<FpContext>?
    private var devices: [UnsafeMutablePointer<FpDevice>: LibfprintDevice] = [:]

    private init(thread: GLibThread, events: @escaping @Sendable (FprintContextEvent) -> Void) {
        self.thread = thread
        self.events = events
    }

    /// Wraps `fp_context_new`, connects FpContext::device-added / device-removed and runs `fp_context_enumerate`
    /// (which iterates the global main context until every device is probed), all on the GLib thread.
    /// `events` is called on the GLib thread, also for the devices found by the enumeration.
    static func start(
        on thread: GLibThread, before: (@Sendable () -> Void)? = nil,
        events: @escaping @Sendable (FprintContextEvent) -> Void
    ) async -> FprintContext {
        let instance = FprintContext(thread: thread, events: events)
        await thread.run {
            before?()
            instance.create()
        }
        return instance
    }

    private func create() {
        let context = fp_context_new()!
        self.context = context
        // The signal handlers own a reference, so a reader dropped without shutdown() leaks rather than dangles.
        let me = Unmanaged.passRetained(self).toOpaque()
        clibfprint_connect_context_device(
            context, "device-added",
            { _, device, data in Unmanaged<FprintContext>.fromOpaque(data!).takeUnretainedValue().added(device!) }, me)
        clibfprint_connect_context_device(
            context, "device-removed",
            { _, device, data in Unmanaged<FprintContext>.fromOpaque(data!).takeUnretainedValue().removed(device!) },
            me)
        // Work posted meanwhile (a `close()` at a stop, which releases `context`) runs when this block
        // returns, so the block is the last use of `context` here: a close that ran between the
        // enumeration and the listing below left `fp_context_get_devices` a released context.
        thread.exclusively {
            fp_context_enumerate(context)
            // Devices libfprint already knew before our handler was connected (none today; cheap to be sure).
            guard let known = fp_context_get_devices(context) else { return }
            for index in 0..<known.pointee.len {
                guard let device = clibfprint_ptr_array_index(known, index) else { continue }
                added(device.assumingMemoryBound(to: FpDevice.self))
            }
        }
    }

    private func added(_ device: UnsafeMutablePointer<FpDevice>) {
        guard devices[device] == nil else { return }
        let wrapper = LibfprintDevice(device, thread: thread)
        devices[device] = wrapper
        events(.added(wrapper))
    }

    private func removed(_ device: UnsafeMutablePointer<FpDevice>) {
        guard let wrapper = devices.removeValue(forKey: device) else { return }
        events(.removed(wrapper))
        wrapper.release()
    }

    /// Releases every device and the context (`g_object_unref`), on the GLib thread; for shutdown.
    func close() async {
        await thread.run { [self] in
            for wrapper in devices.values { wrapper.release() }
            devices.removeAll()
            dropContext()
        }
    }

    /// Enumerates anew with a fresh `FpContext` when this one knows no device: readers that come
    /// without a hotplug event (a virtual device created again, a missed udev event) are found.
    /// Never while a device is known, so no reader is ever listed twice; never after `close`.
    func reenumerateIfEmpty() async {
        await thread.run { [self] in
            guard context != nil, devices.isEmpty else { return }
            dropContext()
            create()
        }
    }

    private func dropContext() {
        guard let context else { return }
        disconnectAndUnref(context, from: self)
        self.context = nil
        Unmanaged.passUnretained(self).release()  // the handlers' reference, taken in create()
    }
}

/// Drops the signal handlers `owner` connected to `object` and our reference to it
/// (`g_signal_handlers_disconnect_by_data`, `g_object_unref`); GLib thread only.
private func disconnectAndUnref<Object>(_ object: UnsafeMutablePointer<Object>, from owner: AnyObject) {
    clibfprint_disconnect_by_data(object, Unmanaged.passUnretained(owner).toOpaque())
    g_object_unref(object)
}
