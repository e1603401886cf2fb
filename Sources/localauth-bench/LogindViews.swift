// SPDX-License-Identifier: Apache-2.0
// localauth-bench logind RUNS UID PID...: the daemon's two ways of placing a caller, side by side,
// for the booted tier (Tests/boot/tier.py, journey l) and its figures. Never installed: the shipped
// daemon has no way to be asked this.
//
// For each PID: what sd-login's files say (`LoginSessions` without a bus: the files, as the daemon
// reads them first) and what logind says over the system bus (`Logind.ask`: `GetSessionByPID` and
// the session's `GetAll`, as the daemon asks when the files do not place the caller). For UID:
// whether it has a local session and one active on a seat, from the files and from the bus. Then
// RUNS of each, alternated, timed (CLOCK_MONOTONIC, ns): the files' view of the first PID, logind's
// answer for it over the bus, and `LidClosed` alone (the question a caller in a session still
// costs when the reader is built in). One JSON object.
import Foundation
import LocalAuthSystemd

struct StderrLog: NoticeLog {
    func notice(_ message: String) { FileHandle.standardError.write(Data("notice: \(message)\n".utf8)) }
    func info(_ message: String) {}
    func debug(_ message: String) {}
}

func sessionJSON(_ session: LoginSession?) -> Any {
    guard let session else { return NSNull() }
    return [
        "id": session.id, "uid": Int(session.ownerUID), "class": session.sessionClass,
        "seat": session.seat ?? NSNull(), "active": session.isActive, "remote": session.isRemote,
    ] as [String: Any]
}

func logindViews(runs: Int, uid: UInt32, pids: [Int32]) async {
    let files = LoginSessions(logind: nil)
    let logind = Logind(log: StderrLog())
    defer { logind.close() }
    var places: [[String: Any]] = []
    for pid in pids {
        let fromFiles = await files.view(of: pid, uid: uid, tty: nil, askLid: false)
        let asked = await logind.ask(sessionOf: pid, uid: uid, lid: false).session
        var bus: Any = "unknown"
        switch asked {
        case .found(let session)?: bus = sessionJSON(session)
        case .none?: bus = "none"
        case .unknown?, nil: bus = "unknown"
        }
        places.append([
            "pid": Int(pid), "files": sessionJSON(fromFiles.session), "files_logind_present": fromFiles.logindPresent,
            "bus": bus,
        ])
    }
    let hasLocal = await files.hasLocalSession(uid: uid)
    let seatSessions = await logind.seatSessionCount(uid: uid)
    let user: [String: Any] = [
        "uid": Int(uid), "files_has_local_session": hasLocal ?? NSNull(),
        "bus_has_local_session": seatSessions.map { $0 > 0 } ?? NSNull(),
        "files_active_on_a_seat": await files.isActiveOnASeat(uid: uid),
        "bus_active_on_a_seat": await logind.hasActiveSeatSession(uid: uid),
    ]
    var filesNs: [Int64] = []
    var busNs: [Int64] = []
    var lidNs: [Int64] = []
    let pid = pids[0]
    for i in 0..<runs {
        // Alternated, so that a moment of load falls on both.
        for which in (i % 2 == 0 ? [0, 1, 2] : [2, 1, 0]) {
            let t0 = nowNs()
            switch which {
            case 0: _ = await files.view(of: pid, uid: uid, tty: nil, askLid: false)
            case 1: _ = await logind.ask(sessionOf: pid, uid: uid, lid: false)
            default: _ = await logind.ask(sessionOf: nil, uid: uid, lid: true)
            }
            let took = nowNs() - t0
            if which == 0 { filesNs.append(took) } else if which == 1 { busNs.append(took) } else { lidNs.append(took) }
        }
    }
    json([
        "places": places, "user": user,
        "timing_ns": ["files": filesNs, "bus_session": busNs, "bus_lid": lidNs],
    ])
}
