// SPDX-License-Identifier: Apache-2.0

import Synchronization

/// Log lines a client causes just by connecting (a connection refused over a limit, a
/// connection closed for bad bytes or idleness): at most `burst` per uid and kind in a `window`,
/// the rest counted and told in one line when the window ends, "… N more … in the last T s".
/// Unthrottled, one user refusing 23,000 connections a second wrote 23,000 lines a second, and
/// journald's rate limit then dropped genuine audit records with them (issue 13, M3).
public final class NoticeThrottle: Sendable {
    /// What a line is about: the uid it is counted under and its kind ("connections refused").
    public struct Key: Hashable, Sendable {
        public var uid: UInt32
        public var kind: String
        public init(uid: UInt32, kind: String) {
            self.uid = uid
            self.kind = kind
        }
    }

    /// What to do with one line.
    public enum Admission: Equatable, Sendable {
        /// Log it.
        case log
        /// Leave it out; it is the first left out in this window: call `summaries(at:)` after
        /// `summaryDue`.
        case suppressedFirst(summaryDue: Duration)
        /// Leave it out; a summary is due already.
        case suppressed
    }

    private struct Window {
        var start: ContinuousClock.Instant
        var logged = 0
        var suppressed = 0
    }

    public let burst: Int
    public let window: Duration
    private let windows = Mutex<[Key: Window]>([:])

    public init(burst: Int = 5, window: Duration = .seconds(10)) {
        self.burst = burst
        self.window = window
    }

    public func admit(_ key: Key, at now: ContinuousClock.Instant) -> Admission {
        windows.withLock { all in
            // A window that ended with nothing left out is as good as none (below): past 1024 they
            // go, so that every uid that ever caused a line does not stay a record for good.
            if all.count > 1024 { all = all.filter { now - $0.value.start < window || $0.value.suppressed > 0 } }
            var w = all[key] ?? Window(start: now)
            if now - w.start >= window {
                // Only a window that left nothing out ends here; one that did waits for its summary.
                guard w.suppressed > 0 else {
                    all[key] = Window(start: now, logged: 1)
                    return .log
                }
            }
            if w.logged < burst {
                w.logged += 1
                all[key] = w
                return .log
            }
            w.suppressed += 1
            all[key] = w
            return w.suppressed == 1 ? .suppressedFirst(summaryDue: w.start + window - now) : .suppressed
        }
    }

    /// Windows kept now (for tests).
    var windowsKept: Int { windows.withLock { $0.count } }

    /// One line per key whose window has ended with lines left out, and those windows closed.
    public func summaries(at now: ContinuousClock.Instant) -> [String] {
        windows.withLock { all in
            var lines: [String] = []
            for (key, w) in all where now - w.start >= window {
                if w.suppressed > 0 {
                    let seconds = Int((now - w.start).components.seconds)
                    lines.append("uid \(key.uid): \(w.suppressed) more \(key.kind) in the last \(seconds) s")
                }
                all[key] = nil
            }
            return lines.sorted()
        }
    }
}
