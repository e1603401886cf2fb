// SPDX-License-Identifier: Apache-2.0
// The readers as a door that shows them follows them (fprintd's Device objects and properties):
// which are present, each plug and unplug, each change of a reader's state. The door gets these
// from the daemon, never the reader itself: it cannot scan, hold or open a reader but through
// `Daemon.handle` and the claims.

import FingerprintReader

/// A reader as a door names it: its id, name, driver, enrol stages and capabilities.
public typealias ReaderDevice = ReaderDeviceInfo
/// A reader plugged in or removed.
public typealias ReaderHotplug = HotplugEvent
/// A change of a reader's finger, stage count or scan type.
public typealias ReaderStatus = ReaderStatusEvent

/// What a door may follow of the readers (`Daemon.readerWatch`).
public struct ReaderWatch: Sendable {
    let reader: FingerprintReader

    /// The readers present now (libfprint's enumeration done first).
    public func present() async -> [ReaderDevice] { await reader.devices() }
    /// Each plug and unplug from now on.
    public func hotplug() -> AsyncStream<ReaderHotplug> { reader.hotplugEvents() }
    /// Each change of a reader's state from now on.
    public func status() -> AsyncStream<ReaderStatus> { reader.statusEvents() }
}

extension Daemon {
    /// The readers to follow; nil when libfprint is not running.
    public nonisolated var readerWatch: ReaderWatch? { parts.reader.map(ReaderWatch.init) }
}
