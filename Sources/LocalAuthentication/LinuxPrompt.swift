// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthLocalization

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Linux-only additions (Apple's API has none of these)
//
// On Apple's systems the framework shows its own UI: the Touch ID sheet and the passcode dialog. Linux has no
// such system UI for a terminal or a desktop app to borrow, so an `LAContext` asks through a prompt that the
// app may supply: `LAContext.linuxPrompt`. By default it is `LALinuxPrompt.terminal`, which writes to the
// controlling terminal and reads the passcode from it without echo. When there is no prompt (nil, or the
// terminal prompt without a controlling terminal), an evaluation that needs the passcode fails with
// `LAError.Code.notInteractive`.

/// Linux-only: a line the authentication UI shows while an evaluation runs.
public struct LALinuxPromptMessage: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// "Unlock the vault: Place your right index finger on the reader [Cancel]".
        case placeFinger
        /// A bad swipe: "Swipe was too short, try again". Not counted as a failure.
        case retry
        /// "Not recognised, try again (2 left)".
        case noMatch
        /// "Too many attempts: use your passcode".
        case biometryLocked
        /// "Wrong passcode"; when another passcode is wanted, the prompt is asked again.
        case passcodeWrong
        /// Any other line worth showing.
        case information
    }

    public var kind: Kind
    public var text: String

    public init(kind: Kind, text: String) {
        self.kind = kind
        self.text = text
    }
}

/// Linux-only: one request for the user's passcode.
public struct LALinuxPasscodeRequest: Sendable {
    /// The daemon's line, with the app's `localizedReason` and cancel title, e.g.
    /// "Unlock the vault: Enter your passcode [Cancel]".
    public var text: String
    /// The context's `localizedReason` for this evaluation.
    public var localizedReason: String
    /// The context's `localizedCancelTitle`.
    public var localizedCancelTitle: String?
    /// 1 for the first question of an evaluation, 2 after a wrong passcode, …
    public var attempt: Int
    /// Time left of a passcode delay after too many wrong passcodes (0 when none runs); a passcode given
    /// before it ends is refused unchecked.
    public var delay: TimeInterval

    let cancellation: Cancellation

    /// True once the evaluation has ended (`invalidate()`, timeout): the answer will be ignored. A prompt
    /// that waits for a person may poll it to give up early.
    public var isCancelled: Bool { cancellation.isCancelled }
}

/// Linux-only: the UI an `LAContext` uses in place of Apple's system UI.
public struct LALinuxPrompt: Sendable {
    /// Shows a line while the evaluation runs (called on the context's private queue).
    public var show: @Sendable (LALinuxPromptMessage) -> Void
    /// Asks for the passcode (called on the context's private queue, which it may block). Returning nil
    /// cancels the evaluation: `LAError.Code.userCancel`.
    public var passcode: @Sendable (LALinuxPasscodeRequest) -> String?
    /// Whether this prompt can ask at all, checked at the start of every evaluation.
    let isAvailable: @Sendable () -> Bool
    /// The terminal's keys stand for the buttons while a finger is awaited: Esc cancels
    /// (`localizedCancelTitle`), Enter chooses the fallback once it is offered (`localizedFallbackTitle`).
    let pressesKeys: Bool

    /// A prompt of the app's own: `show` for the progress lines, `passcode` to ask for the passcode.
    public init(
        show: @escaping @Sendable (LALinuxPromptMessage) -> Void = { _ in },
        passcode: @escaping @Sendable (LALinuxPasscodeRequest) -> String?
    ) {
        self.init(show: show, passcode: passcode, isAvailable: { true })
    }

    init(
        show: @escaping @Sendable (LALinuxPromptMessage) -> Void,
        passcode: @escaping @Sendable (LALinuxPasscodeRequest) -> String?,
        isAvailable: @escaping @Sendable () -> Bool, pressesKeys: Bool = false
    ) {
        self.show = show
        self.passcode = passcode
        self.isAvailable = isAvailable
        self.pressesKeys = pressesKeys
    }

    /// The controlling terminal (`/dev/tty`): progress lines are written to it and the passcode is read from
    /// it without echo. An empty line or end of input cancels. While a finger is awaited, Esc is the cancel
    /// button (`userCancel`) and, once the fallback is offered, Enter is the fallback button
    /// (`userFallback`, or the passcode under `deviceOwnerAuthentication`). Unavailable without a
    /// controlling terminal.
    public static let terminal = LALinuxPrompt(
        show: { message in Terminal.write(message.text + "\n") },
        passcode: { request in Terminal.readSecret(prompt: request.text + ": ", request: request) },
        isAvailable: { Terminal.isAvailable }, pressesKeys: true)
}

/// The terminal prompt's lines about its keys, in one place.
enum PromptText {
    static func pressEscape(_ cancelTitle: String?) -> String {
        // TRANSLATORS: the terminal prompt's cancel key; "Esc" is the key's name.
        guard let title = cancelTitle, !title.isEmpty else { return tr("(Esc: cancel)") }
        // TRANSLATORS: the terminal prompt's cancel key with the app's own cancel title.
        return tr("(Esc: %s)", .text(title))
    }
    // TRANSLATORS: the terminal prompt's fallback key with the fallback's title ("Use passcode").
    static func pressEnter(_ fallbackTitle: String) -> String { tr("(Enter: %s)", .text(fallbackTitle)) }
}

/// The terminal's keys as the prompt's buttons during one request: a thread watches `/dev/tty`
/// (non-canonical, no echo) and sends CANCEL or FALLBACK on the request's connection. Stopped (and
/// the terminal restored) before a passcode is read and when the request ends.
final class PromptKeys: @unchecked Sendable {
    private let lock = NSLock()
    private var running = false
    private var stopping = false
    private var fallbackOffered = false
    private var finished = DispatchSemaphore(value: 0)
    private let send: @Sendable (ClientSignalKey) -> Void

    enum ClientSignalKey { case cancel, fallback }

    init(send: @escaping @Sendable (ClientSignalKey) -> Void) { self.send = send }

    /// Esc works from now on.
    func start() {
        let begin = lock.withLock { () -> Bool in
            guard !running, !stopping else { return false }
            running = true
            finished = DispatchSemaphore(value: 0)
            return true
        }
        guard begin else { return }
        let done = lock.withLock { finished }
        Thread.detachNewThread { [self] in
            Terminal.watchKeys(
                stop: { self.lock.withLock { self.stopping } },
                pressed: { key in
                    switch key {
                    case .escape: self.send(.cancel)
                    case .enter: if self.lock.withLock({ self.fallbackOffered }) { self.send(.fallback) }
                    }
                })
            done.signal()
        }
    }

    /// Enter works from now on.
    func offerFallback() { lock.withLock { fallbackOffered = true } }

    /// Stops watching and gives the terminal back as it was; returns once it has.
    func stop() {
        let (wasRunning, done) = lock.withLock { () -> (Bool, DispatchSemaphore) in
            stopping = true
            return (running, finished)
        }
        if wasRunning { done.wait() }
        lock.withLock {
            running = false
            stopping = false
        }
    }
}

/// A flag shared between an evaluation and its passcode request.
final class Cancellation: @unchecked Sendable {
    private let lock = NSLock()
    private var ended = false
    private var byApp = false

    /// The evaluation has ended, or is ending: its answers are not wanted.
    var isCancelled: Bool { lock.withLock { ended } }
    /// `invalidate()` ended it.
    var isCancelledByApp: Bool { lock.withLock { byApp } }

    func cancel(byApp app: Bool) {
        lock.withLock {
            if app && !ended { byApp = true }
            ended = true
        }
    }
}

/// The controlling terminal.
enum Terminal {
    static func open() -> Int32 { Glibc.open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC) }

    static var isAvailable: Bool {
        let fd = open()
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    static func write(_ text: String) {
        let fd = open()
        guard fd >= 0 else { return }
        defer { close(fd) }
        write(fd, text)
    }

    private static func write(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            offset += n
        }
    }

    enum Key { case escape, enter }

    /// Watches the terminal for Esc and Enter until `stop` says so: non-canonical and without echo
    /// meanwhile (signals such as Ctrl-C still work), restored afterwards. Escape sequences (arrow
    /// keys: Esc followed at once by more bytes) are not Esc.
    static func watchKeys(stop: () -> Bool, pressed: (Key) -> Void) {
        let fd = open()
        guard fd >= 0 else { return }
        defer { close(fd) }
        var saved = termios()
        guard tcgetattr(fd, &saved) == 0 else { return }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(fd, TCSANOW, &raw)
        defer { tcsetattr(fd, TCSANOW, &saved) }
        var byte: UInt8 = 0
        while !stop() {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            guard read(fd, &byte, 1) == 1 else { return }
            switch byte {
            case 0x1B:
                var more = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&more, 1, 30) > 0 {
                    var rest = [UInt8](repeating: 0, count: 16)
                    _ = read(fd, &rest, rest.count)  // an escape sequence, not the Esc key
                } else {
                    pressed(.escape)
                }
            case 0x0A, 0x0D: pressed(.enter)
            default: break
            }
        }
    }

    /// Reads one line without echo; nil on an empty line, end of input, or when the request is cancelled.
    static func readSecret(prompt: String, request: LALinuxPasscodeRequest) -> String? {
        let fd = open()
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var saved = termios()
        let isTTY = tcgetattr(fd, &saved) == 0
        if isTTY {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            quiet.c_lflag |= tcflag_t(ECHONL)
            tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer { if isTTY { tcsetattr(fd, TCSAFLUSH, &saved) } }
        write(fd, prompt)
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            // Wake now and then to notice a cancelled evaluation (invalidate(), timeout).
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 200)
            if request.isCancelled {
                write(fd, "\n")
                return nil
            }
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else {
                if ready < 0 { return nil }
                continue
            }
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            guard n == 1 else { return nil }  // end of input
            if byte == 0x0A || byte == 0x0D { break }
            line.append(byte)
            if line.count > 1024 { return nil }
        }
        let text = String(decoding: line, as: UTF8.self)
        return text.isEmpty ? nil : text
    }
}
