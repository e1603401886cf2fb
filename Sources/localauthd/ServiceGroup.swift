// SPDX-License-Identifier: Apache-2.0
// swift-service-lifecycle's shape, written here: a `Service` runs until it is told to shut down
// gracefully, and a `ServiceGroup` runs them together and stops them in the reverse of their order.
// The package itself (2.13.0, with swift-async-algorithms) cost the release daemon 2.6 MB of idle
// RSS (median 22.1 -> 24.7 MB; the binary 56.9 -> 63.1 MB), against ~0.5 MB allowed; this costs
// about 0.4 MB (22.5 MB, within the runs' spread) and 0.3 MB of binary (ADR 0004).

import Synchronization

/// A long-running part of the daemon: `run` returns once its work is done, or soon after
/// `gracefulShutdown()` returns in it.
protocol Service: Sendable {
    func run() async throws
}

/// One service's graceful shutdown: triggered once, by its group; every wait then returns.
final class GracefulShutdown: Sendable {
    private struct State {
        var triggered = false
        var nextID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())

    /// The shutdown of the service the current task runs for.
    @TaskLocal static var current: GracefulShutdown?

    func trigger() {
        let waiters = state.withLock { s in
            s.triggered = true
            defer { s.waiters = [:] }
            return s.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the shutdown is triggered, or the calling task is cancelled.
    func wait() async {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s in
                    if s.triggered || Task.isCancelled { return true }
                    s.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}

/// Returns once the current service is told to shut down (or its task is cancelled).
func gracefulShutdown() async {
    await GracefulShutdown.current?.wait()
}

/// Runs `operation`, cancelled when the current service is told to shut down; nil when the
/// shutdown came first.
func cancelWhenGracefulShutdown<T: Sendable>(_ operation: @Sendable @escaping () async -> T) async -> T? {
    guard let shutdown = GracefulShutdown.current else { return await operation() }
    return await withTaskGroup(of: Optional<T>?.self) { group in
        group.addTask { .some(await operation()) }
        group.addTask {
            await shutdown.wait()
            return .none
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first ?? nil
    }
}

/// Runs `operation` in a task of its own: its result, or nil once the current service is told to
/// shut down first. Then the operation runs on, cancelled, and its result is dropped: for a wait
/// that cannot be cancelled (libfprint's enumeration), which `cancelWhenGracefulShutdown` would
/// wait for, since a task group waits for every child.
func leftAtGracefulShutdown<T: Sendable>(_ operation: @Sendable @escaping () async -> T) async -> T? {
    let (outcome, report) = AsyncStream.makeStream(of: Optional<T>.self)
    let work = Task { report.yield(.some(await operation())) }
    // Task-local values are inherited: the shutdown waited for is the current service's.
    let shutdown = Task {
        await gracefulShutdown()
        report.yield(.none)
    }
    var first = outcome.makeAsyncIterator()
    let result = await first.next() ?? nil
    work.cancel()
    shutdown.cancel()
    return result
}

/// Sleeps `duration`; false when the current service was told to shut down first.
func sleepUnlessShutDown(for duration: Duration) async -> Bool {
    await cancelWhenGracefulShutdown { (try? await Task.sleep(for: duration)) != nil } ?? false
}

/// Services run together. The run ends when a service whose end ends it returns (a stop signal,
/// the idle exit, a door); the others are then told to shut down one at a time, last first, each
/// after the one before has returned.
struct ServiceGroup {
    struct Entry {
        let service: any Service
        /// False: the service may end alone and the others go on (a watchdog that stops pinging).
        let endsTheRun: Bool
    }
    let entries: [Entry]

    func run() async {
        let shutdowns = entries.map { _ in GracefulShutdown() }
        await withTaskGroup(of: Int.self) { group in
            for (i, entry) in entries.enumerated() {
                group.addTask {
                    await GracefulShutdown.$current.withValue(shutdowns[i]) { try? await entry.service.run() }
                    return i
                }
            }
            var ended = Set<Int>()
            while let i = await group.next() {
                ended.insert(i)
                if entries[i].endsTheRun { break }
            }
            for i in entries.indices.reversed() where !ended.contains(i) {
                shutdowns[i].trigger()
                while !ended.contains(i), let j = await group.next() { ended.insert(j) }
            }
        }
    }
}

extension ServiceGroup.Entry {
    /// A service whose end, when it ends by itself, ends the run.
    static func endsTheRun(_ service: any Service) -> Self { Self(service: service, endsTheRun: true) }

    /// A service that may end by itself and leave the rest running (a watchdog whose event loop
    /// no longer answers stops pinging; systemd then restarts the daemon).
    static func mayEnd(_ service: any Service) -> Self { Self(service: service, endsTheRun: false) }
}
