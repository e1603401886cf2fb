// SPDX-License-Identifier: Apache-2.0
import CSystemd
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// systemd-logind over the system D-Bus (sd-bus): the login session of a caller that sd-login's files
/// cannot place, the lid switch, and `PrepareForSleep` followed with a delay inhibitor.
///
/// sd-bus is not thread-safe, so the connection is only ever used on `queue`. Calls there are
/// synchronous with a short timeout; the daemon actor and Swift's cooperative threads never wait on
/// the bus, they await a continuation. Without a system bus (a test, a container) every question
/// answers nil and the caller falls back; a lost bus is reconnected at most every 5 s, when asked.
public final class Logind: @unchecked Sendable {
    static let destination = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"
    static let sessionInterface = "org.freedesktop.login1.Session"
    /// A logind slower than this is treated as absent for that question (the bus default is 25 s).
    static let callTimeoutUsec: UInt64 = 500_000
    /// logind waits at most `InhibitDelayMaxSec` (5 s by default) for a delay inhibitor; ours is
    /// released after this long even if suspending the reader has not finished.
    static let sleepDelayLimit: DispatchTimeInterval = .seconds(3)

    private let queue = DispatchQueue(label: "localauthd.logind")
    private let log: any NoticeLog
    // Everything below: on `queue` only.
    private var bus: OpaquePointer?
    private var source: DispatchSourceRead?
    private var lastAttemptNs: UInt64?
    private var inhibitor: Int32 = -1
    private var sleepHandler: (@Sendable (_ goingToSleep: Bool) async -> Void)?
    /// Counts `PrepareForSleep` signals, so a late timer never releases a newer inhibitor.
    private var sleepGeneration = 0
    /// The session path `GetSessionByPID` last gave for a uid: only a guess, to send the session's
    /// `GetAll` with the question (`ask`); never taken as an answer. At most 256, then forgotten.
    private var lastSessionPath: [UInt32: String] = [:]

    /// - Parameter log: where what an administrator should know goes (the daemon's audit log).
    public init(log: any NoticeLog) {
        self.log = log
    }

    /// Follows `PrepareForSleep`: `handler(true)` before sleep, holding a delay inhibitor until it
    /// returns (or `sleepDelayLimit` passes), `handler(false)` after resume, then inhibits again.
    public func watchSleep(_ handler: @escaping @Sendable (_ goingToSleep: Bool) async -> Void) {
        queue.async {
            self.sleepHandler = handler
            if self.connected() != nil { self.takeInhibitor() }
        }
    }

    /// What logind said about a pid's session.
    public enum SessionAnswer: Sendable, Equatable {
        case found(LoginSession)
        /// logind answered that the pid is in no session (`NoSessionForPID`).
        case none
        /// No bus, no logind, or no answer in time.
        case unknown
    }

    /// What an evaluation asks logind, in one visit and, usually, one round trip: the session of
    /// `pid` (`GetSessionByPID`, then the session's properties) when a pid is given, and
    /// `LidClosed` when `lid`. The questions go out together and are answered in the order sent.
    /// The session's `GetAll` goes with them when the path logind gave for `uid` last time is a
    /// good guess: its answer is used only if this visit's `GetSessionByPID` names that same path
    /// (a guess, never an answer: everything used is asked in this visit); otherwise it is asked
    /// again for the path named, a second round trip.
    public func ask(sessionOf pid: Int32?, uid: UInt32, lid: Bool) async
        -> (session: SessionAnswer?, lidClosed: Bool?)
    {
        await onQueue {
            guard let bus = self.connected() else { return (pid == nil ? nil : .unknown, nil) }
            defer { self.process() }
            let byPID = pid.flatMap {
                self.send(
                    bus, Self.managerPath, Self.managerInterface, "GetSessionByPID", [.uint32(UInt32(bitPattern: $0))])
            }
            let guess = pid == nil ? nil : self.lastSessionPath[uid]
            let guessed = guess.flatMap { self.sendGetAll(bus, path: $0) }
            let lidCall =
                lid
                ? self.send(
                    bus, Self.managerPath, "org.freedesktop.DBus.Properties", "Get",
                    [.string(Self.managerInterface), .string("LidClosed")])
                : nil
            self.wait(for: [byPID, guessed, lidCall].compactMap { $0 }, bus: bus)
            defer { [byPID, guessed, lidCall].forEach { $0?.release() } }

            var session: SessionAnswer? = nil
            if let byPID {
                if let reply = byPID.reply {
                    if let path = Self.readSessionPath(BusConnection.readAll(reply)) {
                        if self.lastSessionPath.count >= 256 { self.lastSessionPath.removeAll() }
                        self.lastSessionPath[uid] = path
                        // The guess's answer when it was right and came; else the path named, asked now.
                        let found =
                            (path == guess
                                ? guessed?.reply.flatMap { Self.readSession(BusConnection.readAll($0), path: path) }
                                : nil)
                            ?? self.sessionProperties(bus, path: path)
                        session = found.map { SessionAnswer.found($0) } ?? SessionAnswer.unknown
                    } else {
                        session = SessionAnswer.unknown
                    }
                } else {
                    if let name = byPID.errorName { self.log.debug("logind GetSessionByPID: \(name)") }
                    // `SessionAnswer.none`, spelled out: a bare `.none` here would be the optional's nil.
                    session =
                        byPID.errorName == "org.freedesktop.login1.NoSessionForPID" ? SessionAnswer.none : .unknown
                }
            }
            let closed = lidCall?.reply.flatMap { Self.readLidClosed(BusConnection.readAll($0)) }
            return (session, closed)
        }
    }

    /// A method call sent without waiting (`sd_bus_call_async`); `wait(for:bus:)` collects the answers.
    final class PendingCall {
        var slot: OpaquePointer?
        var done = false
        /// The answer (referenced until `release`), or nil with `errorName` (a D-Bus error, a timeout).
        var reply: OpaquePointer?
        var errorName: String?

        /// Cancels the call if it is still pending and drops the answer.
        func release() {
            if let slot { sd_bus_slot_unref(slot) }
            slot = nil
            if let reply { sd_bus_message_unref(reply) }
            reply = nil
        }
    }

    private static let onReply: sd_bus_message_handler_t = { message, userdata, _ in
        guard let userdata else { return 0 }
        let call = Unmanaged<PendingCall>.fromOpaque(userdata).takeUnretainedValue()
        call.done = true
        guard let message else { return 0 }
        if sd_bus_message_is_method_error(message, nil) > 0 {
            if let error = sd_bus_message_get_error(message), let name = error.pointee.name {
                call.errorName = String(cString: name)
            } else {
                call.errorName = "error"
            }
        } else {
            call.reply = sd_bus_message_ref(message)
        }
        return 0
    }

    /// Sends a method call to logind and returns at once; nil when it could not be sent.
    private func send(
        _ bus: OpaquePointer, _ path: String, _ interface: String, _ member: String, _ arguments: [BusValue]
    ) -> PendingCall? {
        guard let message = methodCall(bus, path, interface, member, arguments) else { return nil }
        defer { sd_bus_message_unref(message) }
        let call = PendingCall()
        var slot: OpaquePointer?
        // The timeout is the connection's (`callTimeoutUsec`); `release` cancels a call still pending,
        // so the callback never outlives `call`.
        guard
            sd_bus_call_async(bus, &slot, message, Self.onReply, Unmanaged.passUnretained(call).toOpaque(), 0) >= 0
        else { return nil }
        call.slot = slot
        return call
    }

    /// A session's `GetAll`, sent without waiting.
    private func sendGetAll(_ bus: OpaquePointer, path: String) -> PendingCall? {
        send(bus, path, "org.freedesktop.DBus.Properties", "GetAll", [.string(Self.sessionInterface)])
    }

    /// Runs the connection until every call has its answer (or its timeout, which sd-bus answers
    /// with an error), or the connection fails.
    private func wait(for calls: [PendingCall], bus: OpaquePointer) {
        while calls.contains(where: { !$0.done }) {
            let r = sd_bus_process(bus, nil)
            if r < 0 { return }
            if r > 0 { continue }
            if sd_bus_wait(bus, UInt64.max) < 0 { return }
        }
    }

    /// How many of `uid`'s sessions have a seat (local sessions: a VT, a greeter's login), from
    /// `ListSessions`; nil without a bus or logind.
    public func seatSessionCount(uid: UInt32) async -> Int? {
        await onQueue {
            guard let bus = self.connected() else { return nil }
            defer { self.process() }
            return self.call(bus, Self.managerPath, Self.managerInterface, "ListSessions", []) { reply in
                Self.readSessionList(BusConnection.readAll(reply), uid: uid)?.count
            }
        }
    }

    /// Stops following sleep and closes the connection (daemon shutdown).
    public func close() {
        queue.sync { self.disconnect(nil) }
    }

    // MARK: On the queue

    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }

    /// The open connection, or a new one when the last attempt is at least 5 s old.
    private func connected() -> OpaquePointer? {
        if let bus { return bus }
        let now = DispatchTime.now().uptimeNanoseconds
        if let last = lastAttemptNs, now - last < 5_000_000_000 { return nil }
        lastAttemptNs = now
        var opened: OpaquePointer?
        guard sd_bus_open_system(&opened) >= 0, let opened else { return nil }
        sd_bus_set_method_call_timeout(opened, Self.callTimeoutUsec)
        let added = sd_bus_match_signal(
            opened, nil, Self.destination, Self.managerPath, Self.managerInterface, "PrepareForSleep",
            Self.onPrepareForSleep, Unmanaged.passUnretained(self).toOpaque())
        guard added >= 0 else {
            sd_bus_flush_close_unref(opened)
            return nil
        }
        let watch = DispatchSource.makeReadSource(fileDescriptor: sd_bus_get_fd(opened), queue: queue)
        watch.setEventHandler { [unowned self] in self.process() }
        watch.setCancelHandler { sd_bus_flush_close_unref(opened) }
        watch.resume()
        bus = opened
        source = watch
        log.debug("connected to the system bus")
        return opened
    }

    /// Dispatches what the bus has read or received: signals reach `onPrepareForSleep` here.
    private func process() {
        while let bus {
            let r = sd_bus_process(bus, nil)
            if r < 0 {
                disconnect(
                    "lost the system bus (\(String(cString: strerror(-r)))); sleep is not followed until it is back")
                return
            }
            if r == 0 { return }
        }
    }

    private func disconnect(_ why: String?) {
        if let why { log.notice(why) }
        if inhibitor >= 0 {
            Glibc.close(inhibitor)
            inhibitor = -1
        }
        source?.cancel()  // its cancel handler closes the connection, after the source let go of the fd
        source = nil
        bus = nil
    }

    /// Whether `uid` has a local session (one with a seat) that is the active one on its seat:
    /// `ListSessions`, then each of its sessions' `Active` and `Remote`. False without logind.
    public func hasActiveSeatSession(uid: UInt32) async -> Bool {
        await onQueue {
            guard let bus = self.connected() else { return false }
            defer { self.process() }
            let paths: [String] =
                self.call(bus, Self.managerPath, Self.managerInterface, "ListSessions", []) { reply in
                    Self.readSessionList(BusConnection.readAll(reply), uid: uid)
                } ?? []
            return paths.contains { path in
                self.boolProperty(bus, path: path, interface: Self.sessionInterface, name: "Active") == true
                    && self.boolProperty(bus, path: path, interface: Self.sessionInterface, name: "Remote") == false
            }
        }
    }

    /// A session's properties in one `GetAll` call.
    private func sessionProperties(_ bus: OpaquePointer, path: String) -> LoginSession? {
        call(bus, path, "org.freedesktop.DBus.Properties", "GetAll", [.string(Self.sessionInterface)]) { reply in
            Self.readSession(BusConnection.readAll(reply), path: path)
        }
    }

    private func boolProperty(_ bus: OpaquePointer, path: String, interface: String, name: String) -> Bool? {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var value: Int32 = 0
        let r = sd_bus_get_property_trivial(
            bus, Self.destination, path, interface, name, &error, CChar(UInt8(ascii: "b")), &value)
        process()
        return r >= 0 ? value != 0 : nil
    }

    /// A method call to logind with its arguments, marshalled as the doors' are
    /// (`BusConnection.append`), for the caller to send and unref.
    private func methodCall(
        _ bus: OpaquePointer, _ path: String, _ interface: String, _ member: String, _ arguments: [BusValue]
    ) -> OpaquePointer? {
        var message: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &message, Self.destination, path, interface, member) >= 0,
            let message
        else { return nil }
        guard arguments.allSatisfy({ BusConnection.append($0, to: message) >= 0 }) else {
            sd_bus_message_unref(message)
            return nil
        }
        return message
    }

    /// One method call to logind: `read` takes the answer.
    private func call<T>(
        _ bus: OpaquePointer, _ path: String, _ interface: String, _ member: String, _ arguments: [BusValue],
        read: (OpaquePointer) -> T?
    ) -> T? {
        guard let message = methodCall(bus, path, interface, member, arguments) else { return nil }
        defer { sd_bus_message_unref(message) }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        guard sd_bus_call(bus, message, 0, &error, &reply) >= 0, let reply else {
            if let name = error.name {
                log.debug("logind \(member): \(String(cString: name))")
            }
            return nil
        }
        defer { sd_bus_message_unref(reply) }
        return read(reply)
    }

    /// `Inhibit("sleep", …, "delay")`: logind waits for us before sleeping until the fd is closed.
    private func takeInhibitor() {
        guard inhibitor < 0, sleepHandler != nil, let bus = connected() else { return }
        defer { process() }
        let arguments = [
            "sleep", "localauthd", "Suspend the fingerprint reader and forget reuse windows", "delay",
        ]
        let fd: Int32? = call(bus, Self.managerPath, Self.managerInterface, "Inhibit", arguments.map { .string($0) }) {
            reply in
            // A descriptor (`h`): the one reply read by hand, for `BusValue` does not hold descriptors.
            var received: Int32 = -1
            guard sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "h")), &received) >= 0 else { return nil }
            // The message owns the received descriptor: keep a copy of our own.
            let copy = fcntl(received, F_DUPFD_CLOEXEC, 3)
            return copy >= 0 ? copy : nil
        }
        if let fd {
            inhibitor = fd
            // fprintd's words: clients of its D-Bus API (and its test suite) wait for this line.
            log.info("Got delay inhibitor for sleep")
        } else {
            log.notice("logind refused a sleep delay inhibitor; the reader is not suspended before sleep")
        }
    }

    private func releaseInhibitor() {
        guard inhibitor >= 0 else { return }
        Glibc.close(inhibitor)
        inhibitor = -1
        log.info("Released delay inhibitor for sleep")
    }

    private func prepareForSleep(_ goingToSleep: Bool) {
        sleepGeneration += 1
        let generation = sleepGeneration
        guard let handler = sleepHandler else { return }
        log.info("Preparing devices for \(goingToSleep ? "sleep" : "resume")")
        if goingToSleep {
            queue.asyncAfter(deadline: .now() + Self.sleepDelayLimit) {
                guard self.sleepGeneration == generation, self.inhibitor >= 0 else { return }
                self.log.notice("preparing the reader for sleep took too long; letting the system sleep")
                self.releaseInhibitor()
            }
        }
        Task {
            await handler(goingToSleep)
            self.queue.async {
                guard self.sleepGeneration == generation else { return }
                if goingToSleep { self.releaseInhibitor() } else { self.takeInhibitor() }
            }
        }
    }

    private static let onPrepareForSleep: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        guard case .bool(let goingToSleep)? = BusConnection.readAll(message).first else { return 0 }
        Unmanaged<Logind>.fromOpaque(userdata).takeUnretainedValue().prepareForSleep(goingToSleep)
        return 0
    }
}
