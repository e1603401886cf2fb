// SPDX-License-Identifier: Apache-2.0
import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// sd_notify: a no-op unless systemd (or a test) set `NOTIFY_SOCKET`.
public enum Notify {
    public static func send(_ state: String) { _ = sd_notify(0, state) }

    /// A line a person reads in `systemctl status localauthd`.
    public static func status(_ text: String) { send("STATUS=\(text)") }

    /// Half of `WatchdogSec=` when systemd asks for pings (`WATCHDOG_USEC` for this pid), else nil.
    public static func watchdogInterval() -> Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return .microseconds(Int64(usec / 2))
    }
}
