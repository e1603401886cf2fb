// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthClient
import LocalAuthCore
import LocalAuthProtocol
import LocalAuthStore
import LocalAuthTesting
import Synchronization
import Testing

/// Promise 2 of docs/reliability.md: no lockout is ever lost.
///
/// The real daemon (a debug build) runs with `LOCALAUTHD_DEBUG_WRITE_STEP_FIFOS`: after every step
/// of every durable write (temporary file written, synced, renamed, a file unlinked, the directory
/// synced) it waits on a FIFO. While it waits the test copies the state directory: that copy is
/// exactly what `kill -9` at that point leaves on disk (the page cache outlives the process). Every
/// 25th to 55th time (on average every 40th; the gaps vary so that the real kills do not all fall
/// on the same step of the repeating workload) the test really sends SIGKILL instead and restarts
/// the daemon on the same
/// directory. The workload records failures, lockouts, passcode delays, passcode changes,
/// enrolments and deletions; each copy is opened afterwards with the store (the code the daemon
/// loads state with) and compared with the state acknowledged before and after its operation.
@Suite(.onOwnThreads, .timeLimit(.minutes(6)))
struct KillPointTests {
    static let user = "alice"
    static let killEvery = 40
    /// The gap before the `k`-th real kill: 25 to 55, from a fixed sequence (reproducible).
    static func killGap(_ k: Int) -> Int { 25 + Int((UInt64(k + 1) &* 2_654_435_761) % 31) }
    static let minimumKillPoints = 1000

    /// One operation of the workload, and whether it may lower a counter (a reset).
    struct Op: Sendable {
        var name: String
        var lowers: Bool
    }

    /// What was on disk: the record and the prints (finger → bytes), each user's record of
    /// password use, and whether a password was ever reported (the rules are on).
    struct Disk: Equatable {
        var state: UserAuthState
        var prints: [String: [UInt8]]
        var passwordUses: [String: PasswordUseLoad] = [:]
        var passwordReported = false
    }

    /// A copy of the state directory taken at a kill point, during operation `op`.
    struct KillPoint {
        var copy: String
        var op: Int
        var realKill: Bool
    }

    final class Run: @unchecked Sendable {
        let lock = NSLock()
        var currentOp = 0
        var points: [KillPoint] = []
        var pid: Int32 = 0
        var killed = false
        var ended = false
        var monitorFinished = false
        let directory: String
        init(directory: String) { self.directory = directory }
        func locked<T>(_ body: () -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body()
        }
    }

    /// Writes "q" on `stopped` for the monitor, which reads it when it next waits there; nothing
    /// to do once the monitor has ended (gives up after 5 s).
    static func tellMonitorToStop(_ work: String, _ run: Run) {
        for _ in 0..<50_000 where !run.locked({ run.monitorFinished }) {
            let fd = open(work + "/stopped", O_WRONLY | O_NONBLOCK)
            if fd >= 0 {
                _ = write(fd, "q", 1)
                close(fd)
                return
            }
            usleep(100)
        }
    }

    /// Copies `<state>/users`, the sealing record and the `password-reported` marker into a fresh directory.
    static func copyState(_ stateDirectory: String, to copy: String) {
        mkdir(copy, 0o700)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/cp")
        p.arguments =
            ["-a", stateDirectory + "/users", stateDirectory + "/sealing"]
            + (access(stateDirectory + "/password-reported", F_OK) == 0 ? [stateDirectory + "/password-reported"] : [])
            + [copy + "/"]
        try? p.run()
        p.waitUntilExit()
        keyFile.withLock { $0 = stateDirectory + "-key/sealing.key" }
    }

    /// The machine's key of the state directory the copies come from (they are sealed with it).
    static let keyFile = Mutex("")

    /// What the store makes of a copy; records a failure if it is not clean.
    static func load(_ directory: String, context: String) -> Disk? {
        let notices = Notices()
        do {
            let sealing = SealingConfiguration(method: .keyFile, keyFile: keyFile.withLock { $0 })
            let store = try EnrollmentStore(stateDirectory: directory, sealing: sealing, onNotice: notices.add)
            let state: UserAuthState
            switch try store.loadState(user: user) {
            case .absent: state = UserAuthState()
            case .ok(let s): state = s
            case .corrupt(let why):
                Issue.record("\(context): the state does not load: \(why)")
                return nil
            }
            var prints: [String: [UInt8]] = [:]
            for p in try store.allPrints(user: user) { prints[p.finger.rawValue] = p.data }
            let bad = notices.all.filter { $0.contains("corrupt") }
            #expect(bad.isEmpty, "\(context): \(bad)")
            var uses: [String: PasswordUseLoad] = [:]
            for name in try store.users() {
                let use = try store.loadPasswordUse(user: name)
                if case .corrupt(let why) = use {
                    Issue.record("\(context): the password use of \(name) is corrupt: \(why)")
                }
                if use != .absent { uses[name] = use }
            }
            return Disk(
                state: state, prints: prints, passwordUses: uses, passwordReported: try store.passwordReported())
        } catch {
            Issue.record("\(context): the store does not open: \(error)")
            return nil
        }
    }

    final class Notices: @unchecked Sendable {
        let lock = NSLock()
        var all: [String] = []
        var add: @Sendable (String) -> Void {
            { [self] message in
                lock.lock()
                all.append(message)
                lock.unlock()
            }
        }
    }

    /// `during` was on disk at a kill point of an operation that went from `before` to `after`.
    static func check(_ during: Disk, before: Disk, after: Disk, op: Op, context: String) {
        func notBelow(_ name: String, _ value: Int64, _ old: Int64, _ new: Int64) {
            let floor = op.lowers ? min(old, new) : old
            #expect(value >= floor, "\(context): \(name) went down to \(value) (acknowledged \(old), then \(new))")
        }
        let s = during.state
        notBelow(
            "fingerFailures", Int64(s.fingerFailures), Int64(before.state.fingerFailures),
            Int64(after.state.fingerFailures))
        notBelow(
            "biometryLocked", s.biometryLocked ? 1 : 0, before.state.biometryLocked ? 1 : 0,
            after.state.biometryLocked ? 1 : 0)
        notBelow(
            "passcodeFailures", Int64(s.passcodeFailures), Int64(before.state.passcodeFailures),
            Int64(after.state.passcodeFailures))
        notBelow(
            "passcodeLockedUntilMs", s.passcodeLockedUntilMs, before.state.passcodeLockedUntilMs,
            after.state.passcodeLockedUntilMs)
        #expect(
            s.passcodeHash == before.state.passcodeHash || s.passcodeHash == after.state.passcodeHash,
            "\(context): the passcode hash is neither the old nor the new one")
        // Every print acknowledged before and after is there, whole; none appears from nowhere.
        for (finger, data) in before.prints where after.prints[finger] == data {
            #expect(during.prints[finger] == data, "\(context): \(finger) was lost or changed")
        }
        for (finger, data) in during.prints {
            #expect(
                before.prints[finger] == data || after.prints[finger] == data,
                "\(context): \(finger) is neither the old nor the new print")
        }
        if Set(during.prints.keys) != Set(before.prints.keys) {
            #expect(
                during.state.domainState != before.state.domainState,
                "\(context): the fingers changed under the old domain state")
        }
        // "Password required" never turns into "not required": each record of use is the old or
        // the new one, the marker is never lost, and the rules judge the copy as strictly as the
        // state before or the state after.
        #expect(
            during.passwordReported || !before.passwordReported, "\(context): the password-reported marker was lost")
        #expect(!during.passwordReported || before.passwordReported || after.passwordReported)
        let now = bootNowForTests() ?? BootInstant(bootID: "", bootMs: 0, wallMs: 0)
        func requirement(_ disk: Disk, _ user: String) -> PasswordRequirement {
            let use: PasswordUse? =
                switch disk.passwordUses[user] {
                case .ok(let u)?: u
                case .corrupt?: nil
                default: PasswordUse()
                }
            return PasswordRule.evaluate(
                PasswordFacts(now: now, use: use, userHasNoSession: false, passwordReported: disk.passwordReported),
                rules: PasswordRules())
        }
        for user in Set(during.passwordUses.keys).union(before.passwordUses.keys) {
            #expect(
                during.passwordUses[user] == before.passwordUses[user]
                    || during.passwordUses[user] == after.passwordUses[user],
                "\(context): the password use of \(user) is neither the old nor the new record")
            let strictness = requirement(during, user)
            #expect(
                strictness == requirement(before, user) || strictness == requirement(after, user),
                "\(context): \(user) is judged \(strictness), neither as before nor as after")
        }
    }

    @Test func killPoints_whileRecordingFailuresLockoutsPasscodesAndEnrolments_loseNothingAcknowledged()
        async throws
    {
        let work = try TemporaryDirectory.make("la-kp")
        defer { TemporaryDirectory.remove(work) }
        mkfifo(work + "/stopped", 0o600)
        mkfifo(work + "/go", 0o600)
        let config = work + "/localauthd.conf"
        try "passcode-attempts = 2\npasscode-delays = 1s\n".write(toFile: config, atomically: true, encoding: .utf8)
        let arguments = ["--config", config, "--linger-ms", "-1"]
        let d = try DaemonHarness(
            extraArguments: arguments,
            environment: ["LOCALAUTHD_DEBUG_WRITE_STEP_FIFOS": work])
        let run = Run(directory: work)
        run.pid = try #require(d.process?.processIdentifier)
        let stateDirectory = d.stateDirectory
        defer {
            // Also when the workload fails midway: a daemon waiting at a write step would never
            // answer SIGTERM, and the monitor must not wait on a FIFO forever.
            run.locked { run.ended = true }
            d.kill9()
            Self.tellMonitorToStop(work, run)
        }

        // The monitor: one kill point per byte on `stopped`.
        let (monitorDone, monitorEnded) = AsyncStream.makeStream(of: Void.self)
        Thread.detachNewThread {
            defer {
                run.locked { run.monitorFinished = true }
                monitorEnded.finish()
            }
            var count = 0
            var kills = 0
            var nextKill = Self.killGap(0)
            while true {
                let fd = open(work + "/stopped", O_RDONLY)
                var byte: UInt8 = 0
                let n = read(fd, &byte, 1)
                close(fd)
                if n != 1 { continue }  // a writer that closed without a byte
                if byte == 0x71 { return }  // "q": the workload is over
                count += 1
                let copy = "\(work)/kp-\(count)"
                let realKill = count == nextKill
                if realKill {
                    kills += 1
                    nextKill += Self.killGap(kills)
                }
                let (op, pid) = run.locked { (run.currentOp, run.pid) }
                Self.copyState(stateDirectory, to: copy)
                run.locked { run.points.append(KillPoint(copy: copy, op: op, realKill: realKill)) }
                if realKill {
                    run.locked { run.killed = true }
                    kill(pid, SIGKILL)
                } else {
                    // The daemon opens `go` right after `stopped`; never wait for a daemon that is gone.
                    while true {
                        let go = open(work + "/go", O_WRONLY | O_NONBLOCK)
                        if go >= 0 {
                            _ = write(go, "g", 1)
                            close(go)
                            break
                        }
                        if run.locked({ run.ended }) { return }
                        usleep(100)
                    }
                }
            }
        }

        // The workload, with the state acknowledged after each operation.
        var ops: [Op] = []
        var acknowledged: [Disk] = []  // acknowledged[i]: on disk once operation i had answered (or been killed)
        var realKills = 0
        func acknowledge() {
            let copy = "\(work)/ack-\(acknowledged.count)"
            Self.copyState(d.stateDirectory, to: copy)
            acknowledged.append(
                Self.load(copy, context: "acknowledged state \(acknowledged.count)") ?? acknowledged.last!)
        }
        /// Runs one operation; a real kill during it restarts the daemon.
        func step(_ name: String, lowers: Bool = false, _ body: () async throws -> Void) async throws {
            ops.append(Op(name: name, lowers: lowers))
            run.locked { run.currentOp = ops.count - 1 }
            do {
                try await body()
            } catch {
                guard run.locked({ run.killed }) else { throw error }
            }
            if run.locked({ run.killed }) {
                d.kill9()
                realKills += 1
                try d.start(extraArguments: arguments)
                run.locked {
                    run.killed = false
                    run.pid = d.process!.processIdentifier
                }
            }
            acknowledge()
        }
        ops.append(Op(name: "nothing yet", lowers: false))
        acknowledged.append(Disk(state: UserAuthState(), prints: [:]))
        try await step("enrol the first finger") {
            _ = try await d.enroll(user: Self.user, finger: .rightIndex, printID: "alice-1")
        }
        let biometrics = EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: Self.user, service: "kp", tries: 1,
            timeoutMs: 20_000)
        let owner = EvaluateOptions(
            policy: .deviceOwnerAuthentication, user: Self.user, service: "kp", flags: [.passcodeCapable], tries: 1,
            timeoutMs: 20_000)
        let extraFingers: [FingerName] = [.leftIndex, .rightMiddle, .leftMiddle]
        var cycle = 0
        // A real kill may leave an operation undone, so each stage repeats until the acknowledged
        // state shows it done (bounded).
        var latest: Disk { acknowledged.last! }
        while run.locked({ run.points.count }) < Self.minimumKillPoints {
            if latest.prints["right-index-finger"] == nil {
                try await step("enrol the first finger again") {
                    _ = try await d.enroll(user: Self.user, finger: .rightIndex, printID: "alice-1")
                }
            }
            let passcode = "passcode \(cycle)"
            try await step("passcode set", lowers: true) {
                _ = try d.perform(.passcodeSet(user: Self.user, passcode: passcode, oldPasscode: nil))
            }
            if let finger = extraFingers.first(where: { latest.prints[$0.rawValue] == nil }) {
                try await step("enrol") {
                    _ = try await d.enroll(user: Self.user, finger: finger, printID: "alice-\(cycle + 2)")
                }
            }
            // Locked: the flag, or (a kill after the fifth attempt was counted, before its answer) the
            // count at the limit. A touch laid for an evaluation that will not scan stays on the
            // reader for the next enrolment, so none is laid then.
            var locked: Bool { latest.state.biometryLocked || latest.state.fingerFailures >= 5 }
            for _ in 1...10 where !locked {
                try await step("miss") {
                    try d.simulate("touch", "mallory")
                    _ = try d.perform(.evaluate(biometrics))
                }
            }
            var delayMs: Int64 = 0
            for _ in 1...5 where latest.state.passcodeLockedUntilMs == 0 {
                try await step("wrong passcode") {
                    let (_, events) = try d.perform(.evaluate(owner), onEvent: PolicyIntegrationTests.typing("wrong"))
                    delayMs = events.compactMap(\.delayMs).last ?? delayMs
                }
            }
            // The delay is part of what is recorded; the correct passcode is typed once it ran out.
            usleep(UInt32(min(max(delayMs, 1000), 5000) + 200) * 1000)
            for _ in 1...3 where locked || latest.state.passcodeFailures > 0 {
                try await step("correct passcode", lowers: true) {
                    _ = try d.perform(.evaluate(owner), onEvent: PolicyIntegrationTests.typing(passcode))
                }
            }
            // A password reported for an account with no record yet: each writes (a second
            // report within the minute would not), the first one the marker too.
            let reported = "kp\(cycle)"
            for _ in 1...3 where latest.passwordUses[reported] == nil {
                try await step("password used") {
                    let (r, _) = try d.perform(.passwordUsed(user: reported, service: "kp"))
                    #expect(r.isSuccess, "\(r.message)")
                }
            }
            for finger in extraFingers where latest.prints[finger.rawValue] != nil {
                try await step("delete") {
                    let (r, _) = try d.perform(.delete(user: Self.user, finger: finger, all: false))
                    #expect(r.isSuccess, "\(r.message)")
                }
            }
            cycle += 1
            print("kill points so far: \(run.locked { run.points.count }) after \(cycle) cycles")
        }
        run.locked { run.ended = true }
        Self.tellMonitorToStop(work, run)
        for await _ in monitorDone {}

        let points = run.locked { run.points }
        #expect(points.count >= Self.minimumKillPoints)
        #expect(realKills >= Self.minimumKillPoints / Self.killEvery - 1)
        var checked = 0
        var realKillsCompared = 0
        for (index, point) in points.enumerated() {
            let context =
                "kill point \(index + 1) (\(point.realKill ? "kill -9" : "copy")) during \(ops[point.op].name)"
            guard let during = Self.load(point.copy, context: context) else { continue }
            Self.check(
                during, before: acknowledged[point.op - 1], after: acknowledged[point.op], op: ops[point.op],
                context: context)
            if point.realKill {
                // What the daemon found after the real kill and restart is what the copy shows.
                #expect(acknowledged[point.op] == during, "\(context): the restarted daemon sees other state")
                realKillsCompared += 1
            }
            checked += 1
        }
        #expect(realKillsCompared == realKills)
        #expect(checked == points.count)
        // The lockouts the workload made really happened (the test exercised what it claims).
        #expect(acknowledged.contains { $0.state.biometryLocked })
        #expect(acknowledged.contains { $0.state.passcodeLockedUntilMs > 0 })
        #expect(acknowledged.contains { $0.passwordReported && !$0.passwordUses.isEmpty })
        var byOperation: [String: Int] = [:]
        var killsByOperation: [String: Int] = [:]
        for point in points {
            byOperation[ops[point.op].name, default: 0] += 1
            if point.realKill { killsByOperation[ops[point.op].name, default: 0] += 1 }
        }
        // The real kills fell on more than one kind of operation.
        #expect(killsByOperation.count >= 3, "\(killsByOperation)")
        print(
            "kill points: \(points.count) (\(realKills) real kill -9 with restart), operations: \(ops.count), cycles: \(cycle); by operation: \(byOperation.sorted { $0.key < $1.key }); real kills by operation: \(killsByOperation.sorted { $0.key < $1.key })"
        )
    }
}
