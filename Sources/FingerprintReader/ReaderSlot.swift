// SPDX-License-Identifier: Apache-2.0
// One present reader: its queue, its open/closed state and its linger timer.

import LocalAuthProtocol
import Synchronization

/// One present reader. Operations run one at a time in arrival order; the device is opened on demand and closed
/// `lingerMs` after the last operation, so a USB reader can autosuspend between uses.
final class ReaderSlot: Sendable {
    let info: ReaderDeviceInfo
    let device: LibfprintDevice
    private let queue = ReaderQueue()
    private let lingerMs: Int?

    private struct State {
        var isOpen = false
        /// libfprint reported the device gone; it only waits to be closed.
        var removed = false
        /// The reader is shutting down; nothing new starts.
        var closing = false
        /// Counts operations, so a linger timer armed by an older one does not close under a newer one.
        var generation: UInt64 = 0
        var linger: DeadlineTimer?
        /// Holders that keep the device open between operations (a claim of fprintd's D-Bus API).
        var holds = 0
        /// `fp_device_suspend` was called and `fp_device_resume` not yet: the device is not closed
        /// meanwhile. One whose linger closed it during sleep stayed suspended in libfprint (the resume
        /// skipped a closed reader), which refused every later operation: "the reader is busy".
        var suspended = false
    }
    private let state = Mutex(State())

    init(info: ReaderDeviceInfo, device: LibfprintDevice, lingerMs: Int?) {
        self.info = info
        self.device = device
        self.lingerMs = lingerMs
    }

    /// Open, and not being closed (a close sets it false as it starts).
    var isOpen: Bool { state.withLock { $0.isOpen } }

    /// libfprint reported the device removed (`notify::removed`, before its operation ends); it waits
    /// to be closed and dropped.
    var isRemoved: Bool { device.isGone || state.withLock { $0.removed } }

    /// Opens the device without queueing behind a running operation: that operation holds the
    /// device open, or is opening it, so waiting for it to finish would wait for nothing (and
    /// deadlock a caller that must feed it, like the simulator). Bounded to `patienceMs`.
    func ensureOpen(patienceMs: Int = 2000) async -> Result<Void, ReaderFailure> {
        for _ in 0..<max(1, patienceMs / 10) {
            if !queue.isBusy { return await withOpenDevice { _ in .success(()) } }
            if isOpen { return .success(()) }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return .failure(.busy)
    }

    /// Opens the device (as `ensureOpen`) and keeps it open until `releaseHold`, however long the
    /// linger time.
    func hold() async -> Result<Void, ReaderFailure> {
        state.withLock { $0.holds += 1 }
        let opened = await ensureOpen()
        if case .failure = opened { releaseHold() }
        return opened
    }

    /// Ends one `hold`; the device closes after the linger time once nothing holds it.
    func releaseHold() {
        let generation: UInt64? = state.withLock { state in
            guard state.holds > 0 else { return nil }
            state.holds -= 1
            return state.holds == 0 ? state.generation : nil
        }
        if let generation { scheduleLinger(after: generation) }
    }

    /// Ends one `hold`, and when none remains closes the device now, after any operation queued
    /// before (fprintd's Release closes the reader and reports the close's error).
    func releaseHoldAndClose() async -> Result<Void, ReaderFailure> {
        let last: Bool = state.withLock { state in
            guard state.holds > 0 else { return false }
            state.holds -= 1
            return state.holds == 0
        }
        guard last else { return .success(()) }
        do {
            try await queue.acquire()
        } catch {
            return .failure(error)
        }
        defer { queue.release() }
        let closes: Bool = state.withLock { state in
            guard state.isOpen && !state.closing && state.holds == 0 && !state.suspended else { return false }
            state.isOpen = false  // as the close starts (`closeIfIdle`)
            return true
        }
        guard closes else { return .success(()) }
        return await device.close()
    }

    /// Runs `body` with the device open, after every operation queued before it.
    func withOpenDevice<T: Sendable>(_ body: (LibfprintDevice) async -> Result<T, ReaderFailure>) async -> Result<
        T, ReaderFailure
    > {
        do {
            try await queue.acquire()
        } catch {
            return .failure(error)
        }
        defer { queue.release() }
        let generation = state.withLock { state in
            state.linger?.cancel()
            state.linger = nil
            state.generation &+= 1
            return state.generation
        }
        let result = await runOpen(body)
        scheduleLinger(after: generation)
        return result
    }

    private func runOpen<T: Sendable>(_ body: (LibfprintDevice) async -> Result<T, ReaderFailure>) async -> Result<
        T, ReaderFailure
    > {
        let (removed, closing, isOpen) = state.withLock { ($0.removed, $0.closing, $0.isOpen) }
        if closing { return .failure(.noDevice) }
        if removed { return .failure(.removed) }
        // A waiter cancelled just as it was granted the reader must not start a scan nobody waits for.
        if Task.isCancelled { return .failure(.cancelled) }
        if !isOpen {
            if case .failure(let error) = await device.open() { return .failure(error) }
            state.withLock { $0.isOpen = true }
        }
        return await body(device)
    }

    private func scheduleLinger(after generation: UInt64) {
        guard let lingerMs else { return }
        // A dispatch timer, not Task.sleep: cancelled at the next operation, it lets go at once.
        let timer = DeadlineTimer(ms: Int64(lingerMs)) { [self] in
            Task { await closeIfIdle(since: generation) }
        }
        state.withLock { $0.linger = timer }
    }

    /// Closes the device if no operation ran since `generation`; waits its turn like any operation.
    private func closeIfIdle(since generation: UInt64) async {
        do {
            try await queue.acquire()
        } catch {
            return  // cancelled in the queue: an operation arrived, it re-arms the timer
        }
        defer { queue.release() }
        let idle = state.withLock { state in
            guard
                state.generation == generation && state.isOpen && !state.closing && state.holds == 0
                    && !state.suspended
            else {
                return false  // suspended: the resume lets it linger again
            }
            // Not open from the moment the close starts, not from when it reports: the driver stops
            // taking work (libfprint's virtual drivers stop listening) before its answer reaches
            // this task, and meanwhile `ensureOpen` took a busy queue and an open device for "the
            // operation in flight holds it open" and returned at once: the simulator's SCAN went to
            // a closing device and was lost. libfprint considers a device closed after close, even
            // when it reports an error, so nothing is set back.
            state.isOpen = false
            return true
        }
        guard idle else { return }
        _ = await device.close()
    }

    /// libfprint emitted FpDevice::removed: no operation is pending any more. Close the device, which lets the
    /// context drop it and emit device-removed. Called on the GLib thread, so the close runs in a new task.
    func deviceRemoved() {
        state.withLock { state in
            state.removed = true
            state.linger?.cancel()
            state.linger = nil
        }
        Task { await closeNow() }
    }

    /// Stops new work, cancels the running operation, and closes the device.
    func shutdown() async {
        state.withLock { state in
            state.closing = true
            state.linger?.cancel()
            state.linger = nil
        }
        await device.cancelAll()
        await closeNow()
    }

    private func closeNow() async {
        // Not cancellable: this runs in its own unstructured task or during shutdown.
        try? await queue.acquire()
        defer { queue.release() }
        // Not open as the close starts (`closeIfIdle`).
        let wasOpen: Bool = state.withLock { state in
            defer { state.isOpen = false }
            return state.isOpen
        }
        guard wasOpen else { return }
        _ = await device.close()
    }

    /// Best-effort `fp_device_suspend` of an open reader, outside the queue: libfprint suspends a running
    /// operation itself. The reader stays open until `resume` (its linger may run out during sleep).
    func suspend() async {
        let open = state.withLock { state in
            guard state.isOpen else { return false }
            state.suspended = true
            return true
        }
        guard open else { return }
        _ = await device.suspend()
    }

    /// Best-effort `fp_device_resume` of the reader `suspend` suspended, which is still open; then it
    /// lingers as after an operation.
    func resume() async {
        let generation: UInt64? = state.withLock { state in
            guard state.suspended else { return nil }
            state.suspended = false
            return state.generation
        }
        guard let generation else { return }
        _ = await device.resume()
        scheduleLinger(after: generation)
    }
}
