// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// Exit codes a script can rely on; listed in `--help`.
enum Exit {
    static let success: Int32 = 0
    static let failed: Int32 = 1  // no match, wrong passcode, cancelled
    static let unavailable: Int32 = 2  // no reader, nothing enrolled, locked out, no passcode
    static let notAuthorized: Int32 = 3
    static let unreachable: Int32 = 4  // daemon not running or not speaking the protocol
    static let refused: Int32 = 5  // invalid request, not found, already enrolled, busy, timed out, internal error

    static func code(for result: Int64) -> Int32 {
        switch ResultCode(rawValue: result) {
        case .success: success
        case .authenticationFailed, .userCancel, .userFallback, .systemCancel, .appCancel: failed
        case .biometryNotAvailable, .biometryNotEnrolled, .biometryLockout, .biometryDisconnected, .passcodeNotSet,
            .notInteractive, .invalidContext:
            unavailable
        case .notAuthorized: notAuthorized
        case .invalidRequest, .notFound, .busy, .alreadyEnrolled, .internalError, .notSupported, .timedOut, nil: refused
        }
    }
}

struct ClientOptions: ParsableArguments {
    @Option(help: ArgumentHelp(tr("The daemon's socket (default: $LOCALAUTHD_SOCKET, else /run/localauthd/socket).")))
    var socket: String?

    @Flag(name: [.short, .long], help: ArgumentHelp(tr("Print nothing but errors.")))
    var quiet = false

    /// Connects, runs `request`, prints its events and result, and exits with the documented code.
    func run(
        _ request: Request, timeoutMs: Int64 = 330_000, print printResult: (LocalAuthProtocol.Result) -> Void = { _ in }
    ) throws -> Never {
        Self.run(request, socket: socket, quiet: quiet, timeoutMs: timeoutMs, print: printResult)
    }

    /// The same for a command line `FastPath` has parsed (no ArgumentParser value exists then).
    static func run(
        _ request: Request, socket: String?, quiet: Bool, timeoutMs: Int64 = 330_000,
        print printResult: (LocalAuthProtocol.Result) -> Void = { _ in }
    ) -> Never {
        let connection: DaemonConnection
        do {
            connection = try DaemonConnection(
                socketPath: socket ?? DaemonConnection.defaultSocketPath, clientName: "localauthctl")
        } catch {
            fail(describe(error), code: Exit.unreachable)
        }
        do {
            let result = try connection.perform(request, timeoutMs: timeoutMs) { event in
                if !quiet { show(event) }
                switch event.kind {
                case .passcodeNeeded: return readPasscode(prompt: tr("Passcode: ")).map { .passcode($0) } ?? .cancel
                default: return nil
                }
            }
            if result.isSuccess {
                if !quiet {
                    print(result.localizedMessage())
                    printResult(result)
                }
            } else {
                printError(
                    "localauthctl: \(result.localizedMessage()) (\(result.resultCode?.name ?? String(result.code)))")
            }
            Glibc.exit(Exit.code(for: result.code))
        } catch {
            fail(describe(error), code: Exit.unreachable)
        }
    }

    private static func show(_ event: Event) {
        switch event.kind {
        case .enrollStage:
            let done = Int(event.stage ?? 0)
            let all = max(Int(event.stages ?? 1), 1)
            let bar =
                String(repeating: "#", count: done * 20 / all) + String(repeating: ".", count: 20 - done * 20 / all)
            print("[\(bar)] " + tr("stage %1$d of %2$d", .number(Int64(done)), .number(Int64(all))))
        case .passcodeNeeded: break
        default: print(event.localizedMessage())
        }
    }
}

/// Writes a line to standard error.
func printError(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
}

/// A client error in the person's language; anything else as it describes itself.
func describe(_ error: any Error) -> String {
    (error as? ClientError)?.text(Gettext.shared) ?? "\(error)"
}

func fail(_ message: String, code: Int32) -> Never {
    printError("localauthctl: \(message)")
    Glibc.exit(code)
}

/// Reads a passcode from the terminal without echo, or a line from standard input when it is not a terminal.
func readPasscode(prompt: String) -> String? {
    let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
    if isatty(STDIN_FILENO) != 0 && tty >= 0 {
        defer { close(tty) }
        var saved = termios()
        tcgetattr(tty, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        _ = prompt.withCString { write(tty, $0, strlen($0)) }
        tcsetattr(tty, TCSAFLUSH, &silent)
        defer {
            tcsetattr(tty, TCSAFLUSH, &saved)
            _ = write(tty, "\n", 1)
        }
        return readLine(fd: tty)
    }
    if tty >= 0 { close(tty) }
    return readLine(strippingNewline: true)
}

private func readLine(fd: Int32) -> String? {
    var bytes: [UInt8] = []
    var c: UInt8 = 0
    while read(fd, &c, 1) == 1 {
        if c == 0x0A { break }
        bytes.append(c)
        if bytes.count > 1024 { return nil }
    }
    defer { for i in bytes.indices { bytes[i] = 0 } }
    return String(decoding: bytes, as: UTF8.self)
}

@main
struct LocalAuthCtl: ParsableCommand {
    /// The plain forms of the everyday commands skip swift-argument-parser, whose set-up is half of
    /// the process's CPU time (docs/performance.md); everything else, help, completions and every
    /// error included, goes to it unchanged.
    static func main() {
        if let plain = FastPath.parse(Array(CommandLine.arguments.dropFirst())) { plain.run() }
        main(nil)
    }

    static let configuration = CommandConfiguration(
        commandName: "localauthctl",
        abstract: tr("Enrol fingers and manage localauthd."),
        discussion: [
            tr("Finds the daemon through $LOCALAUTHD_SOCKET, else /run/localauthd/socket."),
            tr("Passcodes are read from the terminal without echo, or from standard input when it is not a terminal."),
            "",
            tr("Exit codes:"),
            "  0  " + tr("success (for verify: the finger matched)"),
            "  1  " + tr("authentication failed: no match, wrong passcode, cancelled"),
            "  2  " + tr("biometrics unavailable: no reader, nothing enrolled, locked out, no passcode set"),
            "  3  " + tr("not authorised for this account or operation"),
            "  4  " + tr("the daemon cannot be reached or broke the protocol"),
            "  5  " + tr("refused: invalid request, not found, already enrolled, busy, timed out, internal error"),
            " 64  " + tr("invalid command line"),
        ].joined(separator: "\n"),
        subcommands: [
            Devices.self, Enroll.self, Verify.self, List.self, Delete.self, Status.self, Simulate.self, Passcode.self,
            Lockout.self, Right.self, ImportFprintd.self,
        ])
}

struct UserOption: ParsableArguments {
    @Option(help: ArgumentHelp(tr("The account (default: your own).")))
    var user: String?
}

func fingerName(_ raw: String?) throws -> FingerName? {
    guard let raw else { return nil }
    guard let finger = FingerName(rawValue: raw) else {
        throw ValidationError(
            tr(
                "'%1$s' is not a finger name; use one of: %2$s", .text(raw),
                .text(FingerName.allCases.map(\.rawValue).joined(separator: ", "))))
    }
    return finger
}

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("List the fingerprint readers."))
    @OptionGroup var connection: ClientOptions
    func run() throws {
        try connection.run(.devices, print: Self.show)
    }

    static func show(_ result: LocalAuthProtocol.Result) {
        for raw in result.fields.allBytes(.device) {
            guard let d = try? DeviceInfo(field: raw) else { continue }
            var caps: [String] = []
            if d.capabilities.contains(.identify) { caps.append("identify") }
            if d.capabilities.contains(.storage) { caps.append("storage") }
            if d.capabilities.contains(.swipe) { caps.append("swipe") }
            print(
                "\(d.name)\tdriver=\(d.driver) id=\(d.deviceId) stages=\(d.enrollStages) \(caps.joined(separator: ","))"
            )
        }
    }
}

struct Enroll: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: tr("Enrol a finger."),
        discussion: tr(
            "A first finger needs root (sudo localauthctl enroll --user NAME). A later one needs proof that you are present first: an enrolled finger, or (after a finger that does not match) the passcode."
        )
    )
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    @Option(help: ArgumentHelp(tr("right-index-finger, left-thumb, … (default: the first free one).")))
    var finger: String?
    func validate() throws { _ = try fingerName(finger) }
    func run() throws {
        try connection.run(.enroll(user: user.user, finger: try fingerName(finger), passcodeCapable: true))
    }
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("Ask for a finger; exit 0 only on a match."))
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    @Flag(help: ArgumentHelp(tr("Allow the passcode as a fallback (deviceOwnerAuthentication).")))
    var passcode = false
    @Option(help: ArgumentHelp(tr("Seconds to wait for a finger.")))
    var timeout: Int64 = 30
    func validate() throws {
        guard (1...300).contains(timeout) else { throw ValidationError(tr("--timeout takes 1 to 300 seconds")) }
    }
    func run() throws {
        try connection.run(.evaluate(Self.options(passcode: passcode, user: user.user, seconds: timeout)))
    }

    static func options(passcode: Bool, user: String?, seconds: Int64) -> EvaluateOptions {
        EvaluateOptions(
            policy: passcode ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics, user: user,
            // English: the command, as the reason
            service: "localauthctl", reason: "localauthctl verify", fallbackTitle: passcode ? nil : "",
            flags: passcode ? [.passcodeCapable] : [], timeoutMs: seconds * 1000)
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("List enrolled fingers."))
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    func run() throws {
        try connection.run(.list(user: user.user), print: Self.show)
    }

    static func show(_ result: LocalAuthProtocol.Result) {
        for finger in result.fields.strings(.finger) { print(finger) }
    }
}

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("Delete an enrolled finger, or all of them."))
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    @Option(help: ArgumentHelp(tr("The finger to delete.")))
    var finger: String?
    @Flag(help: ArgumentHelp(tr("Delete every finger.")))
    var all = false
    func validate() throws {
        _ = try fingerName(finger)
        guard all != (finger != nil) else { throw ValidationError(tr("name one --finger, or --all")) }
    }
    func run() throws {
        try connection.run(.delete(user: user.user, finger: try fingerName(finger), all: all))
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("Show the reader and an account's state."))
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    func run() throws {
        try connection.run(.status(user: user.user ?? PeerName.current), print: Self.show)
    }

    static func show(_ result: LocalAuthProtocol.Result) {
        let f = result.fields
        print(f.bool(.readerPresent) == true ? tr("reader present: yes") : tr("reader present: no"))
        if let n = f.int(.enrolledCount) { print(tr("fingers enrolled: %d", .number(n))) }
        if let locked = f.bool(.biometryLocked) {
            print(locked ? tr("biometry locked: yes") : tr("biometry locked: no"))
        }
        if let set = f.bool(.passcodeSet) { print(set ? tr("passcode set: yes") : tr("passcode set: no")) }
        if let line = Self.passwordLine(f) { print(line) }
    }

    /// When the finger will be accepted again, and why not now (the "password required" rules).
    static func passwordLine(_ f: Frame) -> String? {
        switch f.int(.passwordRule) {
        case 0?:
            return tr(
                "finger after restart: accepted (the password-required rules are off: no PAM stack has reported a password use; pam_localauth.so in the stack where the password is typed does)"
            )
        case 1?:
            guard let until = f.int(.fingerUntilMs) else { return tr("finger accepted: yes") }
            // TRANSLATORS: %s is a local date and time, 2026-11-25 21:03.
            return tr(
                "finger accepted: yes, until %s unless the password is used again",
                .text(LocalTime.describe(ms: until)))
        case 2?:
            // The reason in the person's language (its phrase), else the daemon's English line.
            let why =
                f.bytes(.passwordReasonPhrase).flatMap { Phrase(wireValue: $0) }.map { $0.text(Gettext.shared) }
                ?? f.string(.passwordReason) ?? tr("Password required")
            // TRANSLATORS: %s is why the password is required ("Password required after restart").
            return tr(
                "finger accepted: no — %s; it is accepted again once you use your password (or passcode)", .text(why))
        default:
            return nil
        }
    }
}

/// A wall-clock time as the person's local time, `2026-11-25 21:03` (localtime_r and strftime).
enum LocalTime {
    static func describe(ms: Int64) -> String {
        var seconds = time_t(ms / 1000)
        var parts = tm()
        // English: a time that the C library cannot place, for a bug report
        guard localtime_r(&seconds, &parts) != nil else { return "\(ms / 1000) s after the epoch" }
        var buffer = [CChar](repeating: 0, count: 64)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M", &parts)
        return n > 0 ? String(cString: buffer) : "\(ms / 1000) s after the epoch"  // English: as above
    }
}

enum PeerName {
    static var current: String? {
        guard let pw = getpwuid(getuid()), let name = pw.pointee.pw_name else { return nil }
        return String(cString: name)
    }
}

struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: tr("Drive the simulated reader of a daemon started with --virtual-reader (root only)."),
        discussion: tr(
            "Actions: touch ID (a finger with print id ID), retry [CODE], error [CODE], unplug, finger-on, finger-off.")
    )
    @OptionGroup var connection: ClientOptions
    @Argument(help: ArgumentHelp(tr("touch, retry, error, unplug, finger-on or finger-off.")))
    var action: String
    @Argument(help: ArgumentHelp(tr("The print id for touch; the code for retry and error.")))
    var argument: String?
    func run() throws {
        try connection.run(.simulate(action: action, argument: argument))
    }
}

struct Passcode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: tr("Set, change or remove the passcode (the fallback of deviceOwnerAuthentication)."),
        subcommands: [Set.self, Change.self, Remove.self])

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: tr(
                "Set a passcode: a first one after a touch of your enrolled finger (root: none needed); to change one, use change."
            ))
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        func run() throws {
            guard let new = readPasscode(prompt: tr("New passcode: ")) else {
                fail(tr("no passcode given"), code: Exit.refused)
            }
            try connection.run(.passcodeSet(user: user.user, passcode: new, oldPasscode: nil))
        }
    }

    struct Change: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: tr("Change the passcode: the current one, then the new one."))
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        func run() throws {
            let old = getuid() == 0 ? nil : readPasscode(prompt: tr("Current passcode: "))
            guard let new = readPasscode(prompt: tr("New passcode: ")) else {
                fail(tr("no passcode given"), code: Exit.refused)
            }
            try connection.run(.passcodeSet(user: user.user, passcode: new, oldPasscode: old))
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: tr("Remove the passcode."))
        @OptionGroup var connection: ClientOptions
        @OptionGroup var user: UserOption
        func run() throws {
            let old = getuid() == 0 ? nil : readPasscode(prompt: tr("Current passcode: "))
            try connection.run(.passcodeRemove(user: user.user, oldPasscode: old))
        }
    }
}

struct Lockout: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("Lockouts."), subcommands: [Reset.self])
    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: tr("Clear an account's lockouts and reuse windows (root only)."))
        @OptionGroup var connection: ClientOptions
        @Option(help: ArgumentHelp(tr("The account.")))
        var user: String
        func run() throws {
            try connection.run(.lockoutReset(user: user))
        }
    }
}

struct ImportFprintd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-fprintd",
        abstract: tr("Import the fingerprints fprintd stored (root only)."),
        discussion: tr(
            "Reads fprintd's prints (default: the daemon's fprintd-state-dir, /var/lib/fprint), checks each (a root-owned regular file of a print's size that libfprint reads, made on the reader, for the finger and the user its path names) and adds those an account does not have yet. fprintd's files are never changed. Each import and each skip is in the journal."
        ))
    @OptionGroup var connection: ClientOptions
    @Option(help: ArgumentHelp(tr("fprintd's state directory (<dir>/<user>/<driver>/<device>/<finger>).")))
    var from: String?
    func validate() throws {
        if let from, !from.hasPrefix("/") { throw ValidationError(tr("--from needs an absolute path")) }
    }
    func run() throws {
        try connection.run(.importFprintd(from: from))
    }
}
