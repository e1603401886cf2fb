// SPDX-License-Identifier: Apache-2.0
// System sleep, as logind announces it (`Logind.watchSleep`).

extension Daemon {
    /// Forgets every reuse window (suspend, administrator's request).
    public func clearReuseWindows() { reuseWindows.forgetAll() }

    /// Before system sleep: forget reuse windows, cancel running evaluations (`systemCancel`), and
    /// suspend the reader. A finger given before sleep never counts after it.
    public func prepareForSleep() async {
        clearReuseWindows()
        running.cancelAll(.systemCancel)
        parts.audit.info(
            "system going to sleep: reuse windows cleared, \(running.count) evaluation(s) cancelled, reader suspended")
        await parts.reader?.suspend()
    }

    /// Before the daemon stops (SIGTERM: `systemctl stop` or `restart`): running evaluations end
    /// as `systemCancel` and are answered so, instead of finding their connection closed.
    public func endEvaluationsForStop() -> Int {
        let count = running.count
        running.cancelAll(.systemCancel)
        return count
    }

    /// After system resume.
    public func resumedFromSleep() async {
        await parts.reader?.resume()
        parts.audit.info("system resumed: reader resumed")
    }
}
