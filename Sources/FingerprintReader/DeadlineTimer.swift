// SPDX-License-Identifier: Apache-2.0
import Dispatch

/// A one-shot timer that lets go of its closure when cancelled: a libdispatch timer source.
///
/// Not `Task.sleep`: a cancelled sleep leaves memory behind in the runtime until its deadline would
/// have passed, so a burst of evaluations with 30 s timeouts (and reader linger timers) held megabytes
/// for that long (docs/performance.md, figure 7).
public final class DeadlineTimer: @unchecked Sendable {  // a dispatch source is thread-safe
    private let source: any DispatchSourceTimer

    public init(ms: Int64, queue: DispatchQueue = .global(), _ fire: @escaping @Sendable () -> Void) {
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + .milliseconds(Int(clamping: max(0, ms))))
        source.setEventHandler(handler: fire)
        source.resume()
        self.source = source
    }

    /// `fire` is not called after this returns, unless it already runs.
    public func cancel() { source.cancel() }

    deinit { source.cancel() }
}
