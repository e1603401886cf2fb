// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol

// The reader layer's public vocabulary: plain Swift values, no C type.

/// A fingerprint reader as libfprint describes it (`fp_device_get_*`).
public struct ReaderDeviceInfo: Sendable, Equatable, Hashable {
    /// The handle to pass to `FingerprintReader`'s operations; unique among present readers.
    ///
    /// libfprint's own `fp_device_get_device_id` is "0" for most drivers (all three virtual ones included), so it
    /// cannot tell readers apart: the id is `storageKey`, with "-2", "-3"… added if two identical readers are present.
    public let id: String
    /// `fp_device_get_device_id`: the id libfprint stores in a print and checks in `fp_print_compatible`.
    public let libfprintDeviceID: String
    /// `fp_device_get_name`.
    public let name: String
    /// `fp_device_get_driver`.
    public let driver: String
    /// `fp_device_get_nr_enroll_stages`.
    public let enrollStages: Int
    /// `FP_DEVICE_FEATURE_IDENTIFY`.
    public let supportsIdentify: Bool
    /// `FP_DEVICE_FEATURE_STORAGE`: prints live on the reader (list and delete work).
    public let hasStorage: Bool
    /// `fp_device_get_scan_type` is `FP_SCAN_TYPE_SWIPE`.
    public let isSwipe: Bool

    public init(
        id: String, libfprintDeviceID: String, name: String, driver: String, enrollStages: Int,
        supportsIdentify: Bool, hasStorage: Bool, isSwipe: Bool
    ) {
        self.id = id
        self.libfprintDeviceID = libfprintDeviceID
        self.name = name
        self.driver = driver
        self.enrollStages = enrollStages
        self.supportsIdentify = supportsIdentify
        self.hasStorage = hasStorage
        self.isSwipe = isSwipe
    }

    /// Filename-safe key "driver-deviceid" ([A-Za-z0-9._-] only) under which the store files prints, so a print is
    /// never offered to another reader. Two readers share a key exactly when libfprint considers their prints
    /// compatible (same driver, same device id).
    public var storageKey: String { Self.storageKey(driver: driver, deviceID: libfprintDeviceID) }

    /// The storage key for a driver and libfprint device id; every other character becomes "_".
    public static func storageKey(driver: String, deviceID: String) -> String {
        let raw = "\(driver)-\(deviceID)"
        var key = ""
        for scalar in raw.unicodeScalars {
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9", ".", "_", "-": key.unicodeScalars.append(scalar)
            default: key.append("_")
            }
        }
        return key
    }
}

/// Progress of an enrol, verify or identify, reported on the reader's GLib thread: handlers must return quickly.
public enum ReaderProgress: Sendable, Equatable {
    /// An enrol stage was accepted (`FpEnrollProgress` without an error).
    case enrollStage(done: Int, of: Int)
    /// A scan did not count; the operation goes on.
    /// A scan that did not count (libfprint's `FP_DEVICE_RETRY_*`): the person should simply try again.
    case retry(RetryHint)
    /// The reader is now waiting for a finger (`FP_FINGER_STATUS_NEEDED` became set): the moment to prompt.
    case fingerNeeded
    /// A finger is now on the sensor (`FP_FINGER_STATUS_PRESENT` became set during the operation): the
    /// touch is known before its capture and match end (a reader that never reports it goes straight
    /// to the answer).
    case fingerPresent
    /// libfprint's match callback (`FpMatchCb`): a verify's or identify's answer is known, possibly
    /// before the operation finishes (a reader may still wait for the finger to lift). The index in
    /// the gallery (0 for a verify) of the matching print; nil for no match.
    case matched(index: Int?)
}

/// What a reader reports between operations' results: libfprint's `finger-status` flags, its
/// `nr-enroll-stages` and `scan-type` (which libfprint's virtual devices let a test change).
public struct ReaderStatusEvent: Sendable, Equatable {
    /// `ReaderDeviceInfo.id` of the reader.
    public let deviceID: String
    /// `FP_FINGER_STATUS_PRESENT`: a finger is on the sensor.
    public let fingerPresent: Bool
    /// `FP_FINGER_STATUS_NEEDED`: the reader waits for a finger.
    public let fingerNeeded: Bool
    /// `fp_device_get_nr_enroll_stages`.
    public let enrollStages: Int
    /// `fp_device_get_scan_type` is `FP_SCAN_TYPE_SWIPE`.
    public let isSwipe: Bool
}

/// What a serialised print says about itself (`fp_print_get_driver`, `_device_id`, `_finger`,
/// `_username`): the reader it was made on and whose finger it is.
public struct PrintFacts: Sendable, Equatable {
    public let driver: String
    public let deviceID: String
    /// libfprint's `FpFinger`: 1 (left thumb) … 10 (right little finger), 0 unknown.
    public let finger: Int
    public let username: String?

    /// The store's key for the reader this print belongs to.
    public var storageKey: String { ReaderDeviceInfo.storageKey(driver: driver, deviceID: deviceID) }
}

/// A reader appeared or went away.
public enum HotplugEvent: Sendable, Equatable {
    case added(ReaderDeviceInfo)
    case removed(ReaderDeviceInfo)
}

/// The result of a completed verify.
public enum VerifyOutcome: Sendable, Equatable {
    case match
    case noMatch
}
