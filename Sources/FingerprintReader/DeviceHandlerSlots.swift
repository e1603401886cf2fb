// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// The closures libfprint's signals call on the GLib thread, set by the device's owner:
/// - removed: once libfprint emits FpDevice::removed (no operation pending any more); the owner must
///   then close the device so the context can drop it;
/// - status: with (finger present, finger needed, enrol stages, swipe) when one changes.
///
/// Each is a field of a struct in the lock, never a `Mutex` of the bare function type: reading such
/// a `Mutex` with `withLock { $0 }` re-abstracts the function value and writes it back wrapped in two
/// more thunks, so each status report called (and allocated) a chain as long as all the reports
/// before it, 600 frames deep after 300 reports and without bound (issue 29).
final class DeviceHandlerSlots: Sendable {
    private struct Handlers {
        var removed: (@Sendable () -> Void)?
        var status: (@Sendable (Bool, Bool, Int, Bool) -> Void)?
    }
    private let handlers = Mutex(Handlers())

    func setRemoved(_ handler: @escaping @Sendable () -> Void) { handlers.withLock { $0.removed = handler } }
    func setStatus(_ handler: @escaping @Sendable (Bool, Bool, Int, Bool) -> Void) {
        handlers.withLock { $0.status = handler }
    }
    var removed: (@Sendable () -> Void)? { handlers.withLock { $0.removed } }
    var status: (@Sendable (Bool, Bool, Int, Bool) -> Void)? { handlers.withLock { $0.status } }
}
