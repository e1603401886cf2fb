// SPDX-License-Identifier: Apache-2.0
// localauth-bench: the Swift-client figures of `make bench` (bench/bench.py drives it). Not installed.
//
//   localauth-bench can-evaluate RUNS   LAContext.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics),
//                                       a new context and connection each time (as an app calls it)
//   localauth-bench verify RUNS USER PRINT
//                                       a simulated touch of PRINT, then EVALUATE policy 1 for USER, on one
//                                       connection; PRINT "-": no touch, any result (a user without fingers)
//   localauth-bench status RUNS         DaemonConnection.perform(.status) on one open connection
//   localauth-bench secret RUNS PRINT   authorize, then LASecret.rawData, of an LAPersistedRight (.biometry, 32-byte
//                                       secret) after a simulated touch of PRINT: one RIGHT_USE each
//                                       (evaluation, then the secret), as an app calls it
//   localauth-bench evaluate RUNS PRINT LAContext.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics)
//                                       after a simulated touch of PRINT, a new context each time: the
//                                       same finger without the right, for comparison
//   localauth-bench concurrent CLIENTS ROUNDS USER PRINT [RATE]
//                                       CLIENTS connections, each on its own thread, send ROUNDS status
//                                       requests each while one thread runs verifies (a simulated touch
//                                       of PRINT, then EVALUATE policy 1 for USER) back to back. Without
//                                       RATE all send at once (a burst); with RATE (requests per second,
//                                       all clients together) each client waits an exponentially
//                                       distributed pause before each request (Poisson arrivals)
//   localauth-bench concurrent-uids CLIENTS ROUNDS USER PRINT FIRST_UID HEAVY_CONNECTIONS
//                                       the burst of `concurrent`, each status client connecting under a uid of
//                                       its own (FIRST_UID, FIRST_UID + 1, ...: per-thread setresuid through the
//                                       raw syscall, no passwd entry needed), and one heavy uid (FIRST_UID - 1)
//                                       trying HEAVY_CONNECTIONS connections that send status back to back
//                                       until the burst is over; the verifies stay root's (the console user).
//                                       Must run as root
//   localauth-bench logind RUNS UID PID...
//                                       sd-login's files and logind over the bus, each's view of PID and UID,
//                                       then both timed (LogindViews.swift; the booted tier's journey l)
//
// The daemon is found through LOCALAUTHD_SOCKET. Prints one JSON object: samples in nanoseconds
// (CLOCK_MONOTONIC), request sent to its RESULT read.
import Foundation
import LocalAuthClient
import LocalAuthProtocol
import LocalAuthentication

#if canImport(Glibc)
    import Glibc
#endif

func nowNs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("localauth-bench: \(message)\n".utf8))
    exit(1)
}

func json(_ object: [String: Any]) {
    guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
        fail("cannot encode the result")
    }
    FileHandle.standardOutput.write(data)
    FileHandle.standardOutput.write(Data("\n".utf8))
}

func connect(_ name: String) -> DaemonConnection {
    do {
        return try DaemonConnection(clientName: name)
    } catch {
        fail("\(error)")
    }
}

func canEvaluate(runs: Int) {
    var samples: [Int64] = []
    samples.reserveCapacity(runs)
    for _ in 0..<runs {
        let context = LAContext()
        context.linuxPrompt = nil
        var error: NSError?
        let t0 = nowNs()
        let ok = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
        samples.append(nowNs() - t0)
        guard ok, context.biometryType == .touchID else {
            fail("canEvaluatePolicy: \(String(describing: error)) (is the bench user enrolled?)")
        }
    }
    json(["samples_ns": samples])
}

func status(runs: Int) {
    let connection = connect("localauth-bench")
    var samples: [Int64] = []
    samples.reserveCapacity(runs)
    for _ in 0..<runs {
        let t0 = nowNs()
        let result: RequestResult
        do { result = try connection.perform(.status(user: nil), timeoutMs: 10_000) } catch { fail("status: \(error)") }
        samples.append(nowNs() - t0)
        guard result.isSuccess else { fail("status: \(result.message)") }
    }
    json(["samples_ns": samples])
}

/// Counts down from `parties`; every thread waits until all have arrived.
final class Barrier: @unchecked Sendable {
    private let condition = NSCondition()
    private var waiting: Int
    init(parties: Int) { waiting = parties }
    func arriveAndWait() {
        condition.lock()
        waiting -= 1
        if waiting == 0 { condition.broadcast() }
        while waiting > 0 { condition.wait() }
        condition.unlock()
    }
}

/// Counts threads that have finished.
final class Finished: @unchecked Sendable {
    private let condition = NSCondition()
    private var count = 0
    func one() {
        condition.lock()
        count += 1
        condition.broadcast()
        condition.unlock()
    }
    func wait(for n: Int) {
        condition.lock()
        while count < n { condition.wait() }
        condition.unlock()
    }
}

/// Results collected from many threads.
final class Collector: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var samples: [Int64] = []
    private(set) var failures: [String] = []
    func add(_ values: [Int64]) { lock.withLock { samples += values } }
    func failed(_ why: String) { lock.withLock { failures.append(why) } }

    /// One STATUS on `connection` and how long it took; a refusal or an error is a failure here.
    /// `connectionFailed` when the request could not be made or answered at all.
    func timedStatus(_ connection: DaemonConnection) -> (ns: Int64, connectionFailed: Bool) {
        let t0 = nowNs()
        do {
            let result = try connection.perform(.status(user: nil), timeoutMs: 30_000)
            if !result.isSuccess { failed(result.message) }
            return (nowNs() - t0, false)
        } catch {
            failed("\(error)")
            return (nowNs() - t0, true)
        }
    }
}

/// One verify: a simulated touch of `print` queued on the virtual reader, then EVALUATE to its RESULT.
/// `prompt`, when given, is told how long the daemon took to its placeFinger event (the request
/// read, scheduled and decided up to the scan), so that the rest is the scan's answer reaching the client.
func verify(
    _ connection: DaemonConnection, control: DaemonConnection, user: String, print: String,
    prompt: ((Int64) -> Void)? = nil
) -> Int64 {
    do {
        let queued = try control.perform(.simulate(action: "touch", argument: print), timeoutMs: 10_000)
        guard queued.isSuccess else { fail("simulate touch: \(queued.message)") }
        let options = EvaluateOptions(
            policy: .deviceOwnerAuthenticationWithBiometrics, user: user, service: "localauth-bench", tries: 1,
            timeoutMs: 10_000)
        let t0 = nowNs()
        var promptAt: Int64?
        let result = try connection.perform(.evaluate(options), timeoutMs: 15_000) { event in
            if promptAt == nil, event.kind == .placeFinger { promptAt = nowNs() }
            return nil
        }
        let elapsed = nowNs() - t0
        guard result.isSuccess else { fail("verify: \(result.message)") }
        if let prompt, let promptAt { prompt(promptAt - t0) }
        return elapsed
    } catch {
        fail("verify: \(error)")
    }
}

func verifies(runs: Int, user: String, print: String) {
    let connection = connect("localauth-bench verify")
    let control = connect("localauth-bench control")
    var samples: [Int64] = []
    samples.reserveCapacity(runs)
    for _ in 0..<runs {
        if print == "-" {
            let options = EvaluateOptions(
                policy: .deviceOwnerAuthenticationWithBiometrics, user: user, service: "localauth-bench", tries: 1,
                timeoutMs: 10_000)
            let t0 = nowNs()
            do { _ = try connection.perform(.evaluate(options), timeoutMs: 15_000) } catch {
                fail("evaluate: \(error)")
            }
            samples.append(nowNs() - t0)
        } else {
            samples.append(verify(connection, control: control, user: user, print: print))
        }
    }
    json(["samples_ns": samples])
}

/// `syscall(2)` with three integer arguments (variadic in C; on x86-64 and arm64 its integer
/// arguments travel in the same registers either way).
@_silgen_name("syscall")
func rawSyscall(_ number: Int, _ a: Int, _ b: Int, _ c: Int) -> Int

/// The calling thread alone becomes `uid` (gid `uid`, no supplementary groups), for good: the raw
/// system calls change one thread's credentials, where glibc's wrappers change every thread's.
/// A socket connected afterwards carries these credentials (`SO_PEERCRED`).
func becomeOnThisThread(uid: UInt32) {
    #if arch(x86_64)
        let (setgroups, setresgid, setresuid) = (116, 119, 117)
    #elseif arch(arm64)
        let (setgroups, setresgid, setresuid) = (159, 149, 147)
    #endif
    let id = Int(uid)
    guard rawSyscall(setgroups, 0, 0, 0) == 0, rawSyscall(setresgid, id, id, id) == 0,
        rawSyscall(setresuid, id, id, id) == 0
    else { fail("cannot become uid \(uid) on this thread (errno \(errno)): run as root") }
}

/// The many-uid burst: the settings of `concurrent-uids`.
struct UIDPlan {
    let first: UInt32
    let heavyConnections: Int
}

func concurrent(clients: Int, rounds: Int, user: String, print: String, rate: Double?, uids: UIDPlan? = nil) {
    let verifier = connect("localauth-bench verify")
    let control = connect("localauth-bench control")
    // The verify's own latency with nothing else running, for comparison.
    var idlePrompts: [Int64] = []
    let idleVerifies = (0..<50).map { _ in
        verify(verifier, control: control, user: user, print: print) { idlePrompts.append($0) }
    }

    // As root, all opened here; under uids of their own, each by its thread once it is that uid.
    var connections: [DaemonConnection?] = []
    for i in 0..<clients { connections.append(uids == nil ? connect("localauth-bench status \(i)") : nil) }
    let statuses = Collector()
    let verifies = Collector()
    let verifyPrompts = Collector()
    let heavy = Collector()
    let heavyRefused = Collector()
    let heavyDone = Finished()
    let heavyThreads = uids?.heavyConnections ?? 0
    let ready = Barrier(parties: clients + heavyThreads + 1)
    let done = Finished()
    let stop = Atomic(false)
    let burstOver = Atomic(false)

    let verifyThread = Thread {
        ready.arriveAndWait()
        var local: [Int64] = []
        var prompts: [Int64] = []
        while !stop.value {
            local.append(verify(verifier, control: control, user: user, print: print) { prompts.append($0) })
        }
        verifies.add(local)
        verifyPrompts.add(prompts)
        done.one()
    }
    verifyThread.stackSize = 1 << 20
    verifyThread.start()
    for (i, opened) in connections.enumerated() {
        let thread = Thread {
            var local: [Int64] = []
            local.reserveCapacity(rounds)
            let connection: DaemonConnection
            if let opened {
                connection = opened
            } else {
                becomeOnThisThread(uid: uids!.first + UInt32(i))
                connection = connect("localauth-bench status \(i)")
            }
            ready.arriveAndWait()
            for _ in 0..<rounds {
                if let rate {
                    // Mean pause clients / rate seconds: together the clients send `rate` per second.
                    let pause = -log(Double.random(in: Double.ulpOfOne..<1)) * Double(clients) / rate
                    usleep(UInt32(min(pause, 60) * 1_000_000))
                }
                local.append(statuses.timedStatus(connection).ns)
            }
            statuses.add(local)
            done.one()
        }
        thread.stackSize = 256 << 10
        thread.start()
    }
    // The heavy uid: its connections beyond the per-uid limit are refused at HELLO; the others
    // ask back to back until the burst is over.
    if let uids {
        for i in 0..<uids.heavyConnections {
            let thread = Thread {
                becomeOnThisThread(uid: uids.first - 1)
                let connection = try? DaemonConnection(clientName: "localauth-bench heavy \(i)")
                if connection == nil { heavyRefused.failed("refused") }
                ready.arriveAndWait()
                var local: [Int64] = []
                while let connection, !burstOver.value {
                    let status = heavy.timedStatus(connection)
                    if status.connectionFailed { break }
                    local.append(status.ns)
                }
                heavy.add(local)
                heavyDone.one()
            }
            thread.stackSize = 256 << 10
            thread.start()
        }
    }
    let t0 = nowNs()
    ready.arriveAndWait()
    done.wait(for: clients)
    let wall = nowNs() - t0
    burstOver.value = true
    heavyDone.wait(for: heavyThreads)
    stop.value = true
    done.wait(for: clients + 1)
    if !statuses.failures.isEmpty { fail("\(statuses.failures.count) status requests failed: \(statuses.failures[0])") }
    if !heavy.failures.isEmpty { fail("\(heavy.failures.count) heavy requests failed: \(heavy.failures[0])") }
    var out: [String: Any] = [
        "clients": clients, "rounds": rounds, "rate": rate ?? 0, "status_ns": statuses.samples,
        "verify_ns": verifies.samples, "verify_prompt_ns": verifyPrompts.samples,
        "verify_idle_ns": idleVerifies, "verify_idle_prompt_ns": idlePrompts, "wall_ns": wall,
    ]
    if let uids {
        out["first_uid"] = Int(uids.first)
        out["heavy_uid"] = Int(uids.first - 1)
        out["heavy_ns"] = heavy.samples
        out["heavy_refused"] = heavyRefused.failures.count
        out["heavy_connections"] = uids.heavyConnections
    }
    json(out)
}

/// A flag shared between threads.
final class Atomic<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// A simulated touch of `print`, queued before the timed call.
func touch(_ control: DaemonConnection, _ print: String) {
    do {
        let queued = try control.perform(.simulate(action: "touch", argument: print), timeoutMs: 10_000)
        guard queued.isSuccess else { fail("simulate touch: \(queued.message)") }
    } catch {
        fail("simulate touch: \(error)")
    }
}

func secretLoads(runs: Int, print: String) async {
    let control = connect("localauth-bench control")
    let identifier = "localauth-bench.secret"
    try? await LARightStore.shared.removeRight(forIdentifier: identifier)
    let right: LAPersistedRight
    do {
        right = try await LARightStore.shared.saveRight(
            LARight(requirement: .biometry), identifier: identifier, secret: Data(repeating: 7, count: 32))
    } catch {
        fail("saveRight: \(error)")
    }
    right.linuxPrompt = nil
    var samples: [Int64] = []
    for _ in 0..<runs {
        touch(control, print)
        let t0 = nowNs()
        do {
            // One RIGHT_USE: authorize evaluates the requirement and releases the secret with it.
            try await right.authorize(localizedReason: "localauth-bench")
            let secret = try await right.secret.rawData
            samples.append(nowNs() - t0)
            guard secret.count == 32 else { fail("the secret came back with \(secret.count) bytes") }
        } catch {
            fail("rawData: \(error)")
        }
    }
    try? await LARightStore.shared.removeRight(forIdentifier: identifier)
    json(["samples_ns": samples])
}

func contextEvaluations(runs: Int, print: String) async {
    let control = connect("localauth-bench control")
    var samples: [Int64] = []
    for _ in 0..<runs {
        touch(control, print)
        let context = LAContext()
        context.linuxPrompt = nil
        let t0 = nowNs()
        do {
            _ = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "bench")
            samples.append(nowNs() - t0)
        } catch {
            fail("evaluatePolicy: \(error)")
        }
    }
    json(["samples_ns": samples])
}

let args = CommandLine.arguments
func number(_ i: Int) -> Int {
    guard args.count > i, let n = Int(args[i]), n > 0 else {
        fail("usage: see the top of Sources/localauth-bench/main.swift")
    }
    return n
}
switch args.count > 1 ? args[1] : "" {
case "can-evaluate": canEvaluate(runs: number(2))
case "status": status(runs: number(2))
case "secret":
    guard args.count == 4 else { fail("usage: localauth-bench secret RUNS PRINT") }
    await secretLoads(runs: number(2), print: args[3])
case "evaluate":
    guard args.count == 4 else { fail("usage: localauth-bench evaluate RUNS PRINT") }
    await contextEvaluations(runs: number(2), print: args[3])
case "verify":
    guard args.count == 5 else { fail("usage: localauth-bench verify RUNS USER PRINT") }
    verifies(runs: number(2), user: args[3], print: args[4])
case "concurrent":
    guard args.count == 6 || args.count == 7 else {
        fail("usage: localauth-bench concurrent CLIENTS ROUNDS USER PRINT [RATE]")
    }
    concurrent(
        clients: number(2), rounds: number(3), user: args[4], print: args[5],
        rate: args.count == 7 ? Double(number(6)) : nil)
case "concurrent-uids":
    guard args.count == 8, let first = UInt32(args[6]), first > 1, let heavyConnections = Int(args[7]) else {
        fail("usage: localauth-bench concurrent-uids CLIENTS ROUNDS USER PRINT FIRST_UID HEAVY_CONNECTIONS")
    }
    concurrent(
        clients: number(2), rounds: number(3), user: args[4], print: args[5], rate: nil,
        uids: UIDPlan(first: first, heavyConnections: heavyConnections))
case "logind":
    guard args.count >= 5, let uid = UInt32(args[3]) else { fail("usage: localauth-bench logind RUNS UID PID...") }
    let pids = args[4...].map { Int32($0) ?? -1 }
    guard pids.allSatisfy({ $0 > 0 }) else { fail("usage: localauth-bench logind RUNS UID PID...") }
    await logindViews(runs: number(2), uid: uid, pids: pids)
default: fail("usage: localauth-bench can-evaluate RUNS | status RUNS | concurrent CLIENTS ROUNDS USER PRINT [RATE]")
}
