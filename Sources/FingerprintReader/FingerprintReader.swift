// SPDX-License-Identifier: Apache-2.0
// The reader layer's public face: a typed async API over libfprint. No C type crosses this file's API.

import Glibc
import LocalAuthProtocol
import Synchronization

/// One libfprint context per process: a second live `FingerprintReader` would run a second loop on the same global
/// GLib context.
private let readerIsLive = Atomic<Bool>(false)

/// The present readers and the hotplug subscribers.
private final class ReaderRegistry: Sendable {
    private struct State {
        var slots: [String: ReaderSlot] = [:]
        var order: [String] = []
        var byDevice: [ObjectIdentifier: String] = [:]
        var subscribers: [UInt64: AsyncStream<HotplugEvent>.Continuation] = [:]
        var statusSubscribers: [UInt64: AsyncStream<ReaderStatusEvent>.Continuation] = [:]
        var nextSubscriber: UInt64 = 0
        var closed = false
    }
    private let state = Mutex(State())
    private let lingerMs: Int?

    init(lingerMs: Int?) { self.lingerMs = lingerMs }

    /// Follows libfprint's device-added / device-removed; runs on the GLib thread.
    func handle(_ event: FprintContextEvent) {
        switch event {
        case .added(let device): add(device)
        case .removed(let device): remove(device)
        }
    }

    private func add(_ device: LibfprintDevice) {
        let facts = device.facts
        let (info, subscribers): (ReaderDeviceInfo?, [AsyncStream<HotplugEvent>.Continuation]) = state.withLock {
            state in
            if state.closed { return (nil, []) }
            let base = ReaderDeviceInfo.storageKey(driver: facts.driver, deviceID: facts.deviceID)
            var id = base
            var suffix = 2
            while state.slots[id] != nil {
                id = "\(base)-\(suffix)"
                suffix += 1
            }
            let info = ReaderDeviceInfo(
                id: id, libfprintDeviceID: facts.deviceID, name: facts.name, driver: facts.driver,
                enrollStages: facts.enrollStages, supportsIdentify: facts.supportsIdentify,
                hasStorage: facts.hasStorage, isSwipe: facts.isSwipe)
            let slot = ReaderSlot(info: info, device: device, lingerMs: lingerMs)
            device.onRemoved { [weak slot] in slot?.deviceRemoved() }
            let key = id
            device.onStatus { [weak self] present, needed, stages, swipe in
                self?.publish(
                    ReaderStatusEvent(
                        deviceID: key, fingerPresent: present, fingerNeeded: needed, enrollStages: stages,
                        isSwipe: swipe))
            }
            state.slots[id] = slot
            state.order.append(id)
            state.byDevice[ObjectIdentifier(device)] = id
            return (info, Array(state.subscribers.values))
        }
        guard let info else { return }
        for subscriber in subscribers { subscriber.yield(.added(info)) }
    }

    private func remove(_ device: LibfprintDevice) {
        let (info, subscribers): (ReaderDeviceInfo?, [AsyncStream<HotplugEvent>.Continuation]) = state.withLock {
            state in
            guard let id = state.byDevice.removeValue(forKey: ObjectIdentifier(device)),
                let slot = state.slots.removeValue(forKey: id)
            else { return (nil, []) }
            state.order.removeAll { $0 == id }
            return (slot.info, Array(state.subscribers.values))
        }
        guard let info else { return }
        for subscriber in subscribers { subscriber.yield(.removed(info)) }
    }

    private func publish(_ event: ReaderStatusEvent) {
        for subscriber in state.withLock({ Array($0.statusSubscribers.values) }) { subscriber.yield(event) }
    }

    func subscribeStatus() -> AsyncStream<ReaderStatusEvent> { subscribe(to: \.statusSubscribers) }

    func slot(_ id: String) throws(ReaderFailure) -> ReaderSlot {
        guard let slot = state.withLock({ $0.slots[id] }) else { throw .noDevice }
        return slot
    }

    var allSlots: [ReaderSlot] { state.withLock { state in state.order.compactMap { state.slots[$0] } } }

    /// The readers present: not one libfprint reported removed, which stays a slot until its close
    /// lets the context drop it. Listed meanwhile, it made a status say "reader present" just
    /// after an unplug, and the request that followed found no reader.
    var devices: [ReaderDeviceInfo] { allSlots.filter { !$0.isRemoved }.map(\.info) }

    func subscribe() -> AsyncStream<HotplugEvent> { subscribe(to: \.subscribers) }

    /// A new stream registered in `list` (an already closed registry gives an ended one), unregistered
    /// when its consumer goes.
    private func subscribe<Event: Sendable>(
        to list: WritableKeyPath<State, [UInt64: AsyncStream<Event>.Continuation]> & Sendable
    ) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream()
        let key: UInt64? = state.withLock { state in
            if state.closed { return nil }
            state.nextSubscriber += 1
            state[keyPath: list][state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0[keyPath: list].removeValue(forKey: key) }
        }
        return stream
    }

    /// Forgets every reader and ends every hotplug stream; returns the readers to close.
    func close() -> [ReaderSlot] {
        let (slots, subscribers) = state.withLock { state in
            state.closed = true
            let slots = state.order.compactMap { state.slots[$0] }
            let subscribers = Array(state.subscribers.values)
            for status in state.statusSubscribers.values { status.finish() }
            state.statusSubscribers.removeAll()
            state.slots.removeAll()
            state.order.removeAll()
            state.subscribers.removeAll()
            return (slots, subscribers)
        }
        for subscriber in subscribers { subscriber.finish() }
        return slots
    }
}

/// Repeats a verify or identify that ended on a bad scan: libfprint ends those operations on a retry error, but for
/// the person a bad swipe is not an answer (the hint already went to the progress handler), so the reader keeps
/// waiting for a finger, on the same open device and without leaving the queue.
private func untilNotRetry<Value: Sendable>(_ scan: () async -> Result<ScanResult<Value>, ReaderFailure>) async
    -> Result<
        Value, ReaderFailure
    >
{
    while true {
        switch await scan() {
        case .failure(let error): return .failure(error)
        case .success(.completed(let value)): return .success(value)
        case .success(.retry): if Task.isCancelled { return .failure(.cancelled) }
        }
    }
}

/// Set once libfprint has started (shared with the task that starts it).
private final class StartFlag: Sendable {
    let done = Atomic<Bool>(false)
}

/// The fingerprint readers of this machine, through libfprint.
///
/// One dedicated thread runs GLib's main loop and makes every libfprint call; this class's async methods post work to
/// it and await the result. Work on one reader runs one operation at a time, first come first served. Cancelling the
/// calling task cancels the operation (also one still waiting in the queue) with `ReaderFailure.cancelled`.
/// Create one per process.
public final class FingerprintReader: Sendable {
    private let thread: GLibThread
    /// The context, once `fp_context_new` and the first `fp_context_enumerate` have run.
    private let started: Task<FprintContext, Never>
    private let hasStarted = StartFlag()
    private let registry: ReaderRegistry
    private let isShutDown = Atomic<Bool>(false)
    private let lastEnumerationMs = Mutex<Int64>(0)

    /// Starts the GLib thread and, on it, creates the `FpContext` (`fp_context_new`) and enumerates the readers
    /// (`fp_context_enumerate`); returns when they are enumerated.
    /// - Parameter lingerMs: how long a reader stays open after its last operation (nil: open until shutdown).
    /// - Throws: `ReaderFailure.busy` when another `FingerprintReader` of this process has not been shut down.
    public convenience init(lingerMs: Int? = 2000) async throws {
        try self.init(startingWithLingerMs: lingerMs)
        await enumerated()
    }

    /// The same, returning at once: libfprint starts and enumerates on the GLib thread meanwhile
    /// (tens of milliseconds: every driver's GObject type, udev, GUsb). Every method that needs a
    /// reader waits for the enumeration first; `hasEnumerated` says whether it is over.
    /// - Parameter beforeStart: runs on the GLib thread before libfprint starts (tests hold the
    ///   enumeration back with it).
    public init(startingWithLingerMs lingerMs: Int?, beforeStart: (@Sendable () -> Void)? = nil) throws {
        precondition(lingerMs.map { $0 >= 0 } ?? true, "lingerMs must not be negative")
        guard readerIsLive.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { throw ReaderFailure.busy }
        let thread = GLibThread()
        let registry = ReaderRegistry(lingerMs: lingerMs)
        let flag = hasStarted
        self.thread = thread
        self.registry = registry
        self.started = Task {
            let context = await FprintContext.start(on: thread, before: beforeStart) { registry.handle($0) }
            flag.done.store(true, ordering: .releasing)
            return context
        }
    }

    /// Returns once libfprint has started and enumerated the readers present at start; at once,
    /// without a suspension, once it has: a suspension here would let a request that came later
    /// (a simulated touch) reach the reader before this one.
    public func enumerated() async {
        if hasEnumerated { return }
        _ = await started.value
    }

    /// Whether libfprint has enumerated the readers present at start (`enumerated()` has returned).
    public var hasEnumerated: Bool { hasStarted.done.load(ordering: .acquiring) }

    /// The present readers, in the order they appeared; cheap once enumerated, kept current by hotplug.
    public func devices() async -> [ReaderDeviceInfo] {
        await enumerated()
        return registry.devices
    }

    /// Readers appearing and going from now on (libfprint's device-added / device-removed).
    public func hotplugEvents() -> AsyncStream<HotplugEvent> {
        registry.subscribe()
    }

    /// Finger status and stage-count changes of every reader from now on (libfprint's
    /// `notify::finger-status` and `notify::nr-enroll-stages`), reported as they happen.
    public func statusEvents() -> AsyncStream<ReaderStatusEvent> {
        registry.subscribeStatus()
    }

    /// When no reader is known, enumerates again in the background (a fresh `FpContext`), at most
    /// once per `minimumIntervalMs`: libfprint reports USB readers plugged in later by itself, but a
    /// reader that appears without a hotplug event (libfprint's virtual devices, a missed udev
    /// event) is found only this way. Returns at once; `devices()` lists what was found.
    public func lookForReadersIfNone(minimumIntervalMs: Int64 = 2000) {
        guard registry.allSlots.isEmpty, !isShutDown.load(ordering: .acquiring) else { return }
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let now = Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
        let due = lastEnumerationMs.withLock { last in
            guard last == 0 || now - last >= minimumIntervalMs else { return false }
            last = now
            return true
        }
        guard due, hasEnumerated else { return }
        let started = self.started
        Task.detached { await started.value.reenumerateIfEmpty() }
    }

    /// Enrols a new print: `fp_print_new` with finger and username set, handed to `fp_device_enroll`.
    /// - Parameters:
    ///   - finger: an `FpFinger` raw value, 1 (left thumb) … 10 (right little finger); others are `.dataInvalid`.
    ///   - progress: each accepted stage (`enrollStage(done:of:)`), retry hints and "finger needed", on the GLib
    ///     thread.
    /// - Returns: the print as `fp_print_serialize` writes it.
    public func enroll(
        deviceID: String, finger: Int, username: String, progress: @escaping @Sendable (ReaderProgress) -> Void
    ) async throws(ReaderFailure) -> [UInt8] {
        guard (1...10).contains(finger) else { throw .dataInvalid }
        await enumerated()
        return try await registry.slot(deviceID).withOpenDevice { device in
            await device.enroll(finger: finger, username: username, progress: progress)
        }.get()
    }

    /// Checks one finger against `print` (`fp_device_verify`). Waits for a finger for as long as the caller's task
    /// runs: callers own timeouts, by cancelling.
    public func verify(deviceID: String, print: [UInt8], progress: @escaping @Sendable (ReaderProgress) -> Void)
        async throws(ReaderFailure) -> VerifyOutcome
    {
        await enumerated()
        let matched = try await registry.slot(deviceID).withOpenDevice { device in
            await untilNotRetry { await device.verify(print: print, progress: progress) }
        }.get()
        return matched ? .match : .noMatch
    }

    /// Looks for the finger among `prints` (`fp_device_identify`).
    /// - Returns: the index in `prints` of the match, nil for no match.
    /// - Throws: `.notSupported` for readers without identify support.
    public func identify(deviceID: String, prints: [[UInt8]], progress: @escaping @Sendable (ReaderProgress) -> Void)
        async throws(ReaderFailure) -> Int?
    {
        await enumerated()
        let slot = try registry.slot(deviceID)
        guard slot.info.supportsIdentify else { throw .notSupported }
        return try await slot.withOpenDevice { device in
            await untilNotRetry { await device.identify(prints: prints, progress: progress) }
        }.get()
    }

    /// The prints stored on the reader itself (`fp_device_list_prints`), serialised.
    /// - Throws: `.notSupported` for readers without storage.
    public func listStoredPrints(deviceID: String) async throws(ReaderFailure) -> [[UInt8]] {
        await enumerated()
        let slot = try registry.slot(deviceID)
        guard slot.info.hasStorage else { throw .notSupported }
        return try await slot.withOpenDevice { device in await device.listPrints() }.get()
    }

    /// Deletes a print from the reader's own storage (`fp_device_delete_print`).
    /// - Throws: `.notSupported` for readers without storage.
    public func deleteStoredPrint(deviceID: String, print: [UInt8]) async throws(ReaderFailure) {
        await enumerated()
        let slot = try registry.slot(deviceID)
        guard slot.info.hasStorage else { throw .notSupported }
        try await slot.withOpenDevice { device in await device.deletePrint(print) }.get()
    }

    /// Opens the reader now if it is closed (`fp_device_open`) and keeps it open for the linger period; for the
    /// simulator, because libfprint's virtual drivers bind their socket only at open. Never waits behind a running
    /// operation (which holds the reader open): it returns once the reader is open, or `.busy` after
    /// `patienceMs` (2 s unless said) while an operation opens or closes it.
    public func ensureOpen(deviceID: String, patienceMs: Int = 2000) async throws(ReaderFailure) {
        await enumerated()
        try await registry.slot(deviceID).ensureOpen(patienceMs: patienceMs).get()
    }

    /// What a serialised print says about itself (`fp_print_deserialize`): its driver, device id, finger
    /// and user. Bytes that are not a libfprint print are `.dataInvalid`; no reader is involved.
    public func describePrint(_ bytes: [UInt8]) async throws(ReaderFailure) -> PrintFacts {
        try await thread.run { describe(bytes) }.get()
    }

    /// Opens the reader now and keeps it open until `releaseHold` (fprintd's Claim: the reader stays open
    /// for its claimer). Holds are counted; the reader closes after the linger time once none remains.
    public func hold(deviceID: String) async throws(ReaderFailure) {
        try await registry.slot(deviceID).hold().get()
    }

    /// Ends one `hold` of the reader; nothing when it is not present.
    public func releaseHold(deviceID: String) {
        try? registry.slot(deviceID).releaseHold()
    }

    /// Ends one `hold` and, when it was the last, closes the reader now (`fp_device_close`, after the
    /// operations queued before), reporting the close's error, as fprintd's Release does.
    public func releaseHoldAndClose(deviceID: String) async throws(ReaderFailure) {
        try await registry.slot(deviceID).releaseHoldAndClose().get()
    }

    /// Prepares open readers for system suspend (`fp_device_suspend`); best effort, errors are ignored.
    public func suspend() async {
        await enumerated()
        for slot in registry.allSlots { await slot.suspend() }
    }

    /// Wakes open readers after system resume (`fp_device_resume`); best effort, errors are ignored.
    public func resume() async {
        await enumerated()
        for slot in registry.allSlots { await slot.resume() }
    }

    /// Cancels running operations, closes the readers (`fp_device_close`), releases the context and stops the GLib
    /// thread. Later calls fail with `.noDevice`; hotplug streams end. Afterwards a new `FingerprintReader` may be
    /// created.
    public func shutdown() async {
        guard isShutDown.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        let context = await started.value
        for slot in registry.close() { await slot.shutdown() }
        await context.close()
        thread.stop()
        readerIsLive.store(false, ordering: .releasing)
    }
}
