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
// answer for it over the bus, the same two for the second PID (a process in no session),
// `LidClosed` alone (the question a caller in a session still costs
// when the reader is built in), and reading the boot id from this process's /proc and as PID 1
// sees it (`BootClock`'s two paths). One JSON object.
import Foundation
import LocalAuthSystemd

#if canImport(Glibc)
    import Glibc
#endif

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
    var samples: [[Int64]] = Array(repeating: [], count: 7)
    let pid = pids[0]
    // The second pid (a process in no session, when given): "none" both ways.
    let outside = pids.count > 1 ? pids[1] : pid
    for i in 0..<runs {
        // Alternated, so that a moment of load falls on each.
        for which in (i % 2 == 0 ? Array(0..<7) : Array((0..<7).reversed())) {
            let t0 = nowNs()
            switch which {
            case 0: _ = await files.view(of: pid, uid: uid, tty: nil, askLid: false)
            case 1: _ = await logind.ask(sessionOf: pid, uid: uid, lid: false)
            case 2: _ = await logind.ask(sessionOf: nil, uid: uid, lid: true)
            case 3: readSmall("/proc/sys/kernel/random/boot_id")
            case 4: readSmall("/proc/1/root/proc/sys/kernel/random/boot_id")
            case 5: _ = await files.view(of: outside, uid: uid, tty: nil, askLid: false)
            default: _ = await logind.ask(sessionOf: outside, uid: uid, lid: false)
            }
            samples[which].append(nowNs() - t0)
        }
    }
    json([
        "places": places, "user": user,
        "timing_ns": [
            "files": samples[0], "bus_session": samples[1], "bus_lid": samples[2], "boot_id_own": samples[3],
            "boot_id_pid1": samples[4], "files_none": samples[5], "bus_none": samples[6],
        ],
    ])
}

/// open, read, close: a boot id as `BootClock.readBootID` reads it.
func readSmall(_ path: String) {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { fail("cannot open \(path)") }
    var buffer = [UInt8](repeating: 0, count: 64)
    guard read(fd, &buffer, buffer.count) > 0 else { fail("cannot read \(path)") }
    close(fd)
}
