// SPDX-License-Identifier: Apache-2.0
import Dispatch
import LocalAuthDaemon
import LocalAuthDoorLimits
import LocalAuthSystemd

/// The socket's limits at the D-Bus door (issue 26): every Device method call of a non-root caller
/// takes one of the socket's per-uid request turns (`RequestGate`, shared with the socket: at most
/// `requestsPerUID` running at once over both doors, `requestsPerSecondPerUID` started a second
/// after a burst) before anything is logged or polkit is asked, and holds it until it is answered.
/// A uid has at most `callsPerUID` calls at the door at once (the socket's connections per uid, each
/// of which carries one request); more are refused with `LimitsExceeded` at once. The lines a caller
/// can cause go through the socket's `NoticeThrottle`. Calls of one uid keep their order. Root's own
/// calls (real uid 0) pass at once, as on the socket. Lives on the bus queue.
final class FprintdGate: @unchecked Sendable {
    let requests: RequestGate
    let throttle: NoticeThrottle
    let callsPerUID: Int
    let audit: AuditLog
    let queue: DispatchQueue
    // On the queue.
    private var atDoor: [UInt32: Int] = [:]
    /// Calls waiting for a turn, per uid in arrival order.
    private var waiting: [UInt32: [() -> Void]] = [:]

    init(requests: RequestGate, throttle: NoticeThrottle, callsPerUID: Int, audit: AuditLog, queue: DispatchQueue) {
        self.requests = requests
        self.throttle = throttle
        self.callsPerUID = callsPerUID
        self.audit = audit
        self.queue = queue
    }

    /// Runs `then` on the queue once `caller` has a turn for `call` (at once when it may start
    /// now); the turn is given back when the call is answered.
    func admit(_ call: BusCall, caller: PeerCredentials, then: @escaping () -> Void) {
        let uid = caller.accountUID
        guard uid != 0 else { return then() }
        guard atDoor[uid, default: 0] < callsPerUID else {
            notice(
                "refused D-Bus \(call.member) of \(call.sender) (\(caller)): too many calls at once", uid: uid,
                kind: "D-Bus calls refused (too many at once)")
            return call.fail(
                BusError(
                    name: "org.freedesktop.DBus.Error.LimitsExceeded",
                    message: "Too many calls from uid \(uid) at once"))
        }
        atDoor[uid, default: 0] += 1
        call.whenAnswered { [self] in
            atDoor[uid, default: 1] -= 1
            if atDoor[uid] == 0 { atDoor[uid] = nil }
        }
        let requests = self.requests
        let run = {
            call.whenAnswered { requests.leave(uid: uid) }
            then()
        }
        if waiting[uid] == nil, requests.tryEnter(uid: uid) { return run() }
        waiting[uid, default: []].append(run)
        if waiting[uid]!.count == 1 { nextTurn(uid) }
    }

    /// Waits for `uid`'s next turn and gives it to its first waiting call.
    private func nextTurn(_ uid: UInt32) {
        let requests = self.requests
        Task {
            _ = await requests.enter(uid: uid)  // never cancelled: false only then
            self.queue.async { [self] in
                guard var calls = waiting[uid], !calls.isEmpty else { return requests.leave(uid: uid) }
                let run = calls.removeFirst()
                waiting[uid] = calls.isEmpty ? nil : calls
                run()
                if waiting[uid] != nil { nextTurn(uid) }
            }
        }
    }

    /// A line a caller can cause, through the throttle; when the first line of a window is left
    /// out, its summary ("uid N: M more … in the last T s") follows at the end of the window.
    func notice(_ line: String, uid: UInt32, kind: String) {
        switch throttle.admit(NoticeThrottle.Key(uid: uid, kind: kind), at: .now) {
        case .log:
            audit.notice(line)
        case .suppressedFirst(let due):
            let (seconds, attoseconds) = due.components
            let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000) + 1_000_000
            let (throttle, audit) = (self.throttle, self.audit)
            queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
                for summary in throttle.summaries(at: .now) { audit.notice(summary) }
            }
        case .suppressed:
            break
        }
    }
}
