// SPDX-License-Identifier: Apache-2.0

/// Every line the policy core says to a person, as an identifier and its arguments.
///
/// The core decides *what* to say; `english` is the one place that says it in English. Today the
/// daemon renders a phrase into a frame's `message`; a client that knows the identifiers can render
/// them in its own language instead (the wire carries the English text until it carries these).
public indirect enum Phrase: Equatable, Sendable {
    // Results of an evaluation.
    case authenticatedWithFinger
    case authenticatedWithPasscode
    case authenticatedByRecentSuccess
    case policyCanBeEvaluated
    case fingerNotRecognised
    case userChoseFallback
    case cancelled(ResultCode)
    case timedOutWaitingForFinger
    case timedOutWaitingForPasscode
    /// The request's deadline passed while another request of the same user ran.
    case timedOutWaitingForTurn(user: String)
    case interactionNotAllowed
    case passcodeNeededButClientCannotAsk
    case noPasscodeAndNoFinger
    /// A passcode-only requirement (a right's `devicePasscode`) with no passcode set.
    case noPasscodeSet
    case noFingerEnrolled
    /// The user's fingers are enrolled only on readers that are not connected (`biometryDisconnected`).
    case fingersOnDisconnectedReader
    case stateUnreadable
    /// The state could not be written before the attempt, or the success could not be recorded: the
    /// attempt is refused, whether the finger or passcode was right or wrong.
    case attemptNotRecorded
    case biometryLocked(passcodeSet: Bool)
    case fingerNotAvailable(ReaderUnavailable)
    case readerFailed(String)

    // Prompts and events.
    case placeFinger(FingerName?)
    /// A prompt, with whose request it is: "… (sudo for alice)".
    case forRequest(Phrase, RequestLabel)
    case noMatch(triesLeft: Int)
    case enterPasscode
    case wrongPasscode
    case passcodeLocked(remainingMs: Int64)
    case retry(RetryHint)
    case fallbackUsePasscode
    case fallbackEnterPassword
    /// A client's own text (a fallback title), shown as it is.
    case verbatim(String)
    /// `"<reason>: <instruction> [<cancel title>]"`: how the caller's reason and cancel title reach a
    /// text client such as PAM.
    case prompt(reason: String?, Phrase, cancelTitle: String?)
    /// Two lines said at once: "Enter your passcode — Passcode locked; try again in 45 seconds".
    case both(Phrase, Phrase)

    // Changing the passcode.
    case passcodeSet(user: String)
    case passcodeRemoved(user: String)
    case noPasscodeToRemove(user: String)
    case currentPasscodeNeeded
    case currentPasscodeWrong
    case passcodeNotStored
    case passcodeNotHashed
    /// A first passcode needs an enrolled finger in the same request, or root; `because` says why the
    /// finger did not count.
    case firstPasscodeNeedsFinger(user: String, because: Phrase)

    // The "password required" rules (docs/policy.md, rows R).
    /// Why the finger is refused and the password asked for, in one line.
    case passwordRequired(PasswordRequiredReason)
    /// A report that the password was used, not believed (rows U).
    case passwordUseNotRecorded(PasswordReportRefusal)

    /// The phrase in English.
    public var english: String {
        switch self {
        case .authenticatedWithFinger: "Authenticated with fingerprint"
        case .authenticatedWithPasscode: "Authenticated with passcode"
        case .authenticatedByRecentSuccess: "Authenticated by a recent success"
        case .policyCanBeEvaluated: "The policy can be evaluated"
        case .fingerNotRecognised: "Fingerprint not recognised"
        case .userChoseFallback: "The user chose the fallback"
        case .cancelled(let code):
            switch code {
            case .userCancel: "Cancelled by the user"
            case .appCancel: "Cancelled by the application"
            case .systemCancel: "Cancelled by the system"
            default: "Cancelled"
            }
        case .timedOutWaitingForFinger: "Timed out waiting for a fingerprint"
        case .timedOutWaitingForPasscode: "Timed out waiting for the passcode"
        case .timedOutWaitingForTurn(let user): "Timed out waiting for another request of \(user) to finish"
        case .interactionNotAllowed: "Interaction is not allowed"
        case .passcodeNeededButClientCannotAsk: "A passcode is needed but this client cannot ask for one"
        case .noPasscodeAndNoFinger: "No passcode is set and no fingerprint can be used"
        case .noPasscodeSet: "No passcode is set"
        case .noFingerEnrolled: "No fingerprint is enrolled for this user"
        case .fingersOnDisconnectedReader: "The fingerprint reader your fingers are enrolled on is not connected"
        case .stateUnreadable: "Stored authentication state is unreadable; ask an administrator"
        case .attemptNotRecorded:
            "The attempt could not be recorded (is the state directory's file system full?); "
                + "fingerprint and passcode are refused until it can be"
        case .biometryLocked(let passcodeSet):
            passcodeSet
                ? "Fingerprint locked after too many attempts — use your passcode"
                : "Fingerprint locked after too many attempts"
        case .fingerNotAvailable(let why): "Fingerprint not available: \(why.english)"
        case .readerFailed(let why): "Fingerprint reader failed: \(why)"
        case .placeFinger(let finger):
            finger.map { "Place your \($0.spoken) on the fingerprint reader" }
                ?? "Place a finger on the fingerprint reader"
        case .forRequest(let phrase, let label): "\(phrase.english) (\(label.english))"
        case .noMatch(let left):
            switch left {
            case 0: "Fingerprint not recognised"
            case 1: "Fingerprint not recognised (1 try left)"
            default: "Fingerprint not recognised (\(left) tries left)"
            }
        case .enterPasscode: "Enter your passcode"
        case .wrongPasscode: "Wrong passcode"
        case .passcodeLocked(let ms): "Passcode locked; try again in \(Phrase.duration(ms: ms))"
        case .retry(let hint): hint.message
        case .fallbackUsePasscode: "Use passcode"
        case .fallbackEnterPassword: "Enter password"
        case .verbatim(let text): text
        case .prompt(let reason, let instruction, let cancel):
            (reason.flatMap { $0.isEmpty ? nil : "\($0): " } ?? "") + instruction.english
                + (cancel.flatMap { $0.isEmpty ? nil : " [\($0)]" } ?? "")
        case .both(let first, let second): "\(first.english) — \(second.english)"
        case .passcodeSet(let user): "Passcode set for \(user)"
        case .passcodeRemoved(let user): "Passcode removed for \(user)"
        case .noPasscodeToRemove(let user): "\(user) has no passcode"
        case .currentPasscodeNeeded: "The current passcode is needed"
        case .currentPasscodeWrong: "The current passcode is wrong"
        case .passcodeNotStored: "The passcode could not be stored"
        case .passcodeNotHashed: "The passcode could not be hashed"
        case .firstPasscodeNeedsFinger(let user, let because):
            "A first passcode needs an enrolled finger, or root (sudo localauthctl passcode set --user \(user)): "
                + because.english
        case .passwordRequired(let reason):
            switch reason {
            case .restart: "Password required after restart"
            case .maxAge(let ms): "Password required after \(Phrase.duration(ms: ms))"
            case .idle(let passwordMs, let fingerMs):
                "Password required: not used for \(Phrase.duration(ms: passwordMs)) and no fingerprint for "
                    + Phrase.duration(ms: fingerMs)
            case .firstSession: "Password required to start your first session"
            case .useUnknown: "Password required: its last use could not be read"
            }
        case .passwordUseNotRecorded(let refusal):
            switch refusal {
            case .connectionOrphaned: "Password use not recorded: the process that opened this connection has exited"
            case .remoteSession: "Password use not recorded: it comes from a remote session"
            case .noSession:
                "Password use not recorded: a user's own report counts only from inside their active local session"
            case .notOwnSession: "Password use not recorded: it comes from another user's session"
            case .sessionClass(let name):
                "Password use not recorded: it comes from a session of class \(Echo.quoted(name))"
            case .sessionNotActive: "Password use not recorded: the session is not the active one on its seat"
            }
        }
    }

    /// "45 seconds", "1 minute", "15 minutes", "1 hour": rounded up, so the person never retries
    /// too early.
    public static func duration(ms: Int64) -> String {
        let seconds = max((ms + 999) / 1000, 1)
        if seconds < 60 { return seconds == 1 ? "1 second" : "\(seconds) seconds" }
        let minutes = (seconds + 59) / 60
        if minutes < 60 || minutes % 60 != 0 { return minutes == 1 ? "1 minute" : "\(minutes) minutes" }
        let hours = minutes / 60
        return hours == 1 ? "1 hour" : "\(hours) hours"
    }
}

/// Why a finger is not accepted now and the password is asked for instead (`PasswordRule`).
public enum PasswordRequiredReason: Equatable, Sendable {
    /// The password has not been used since this boot.
    case restart
    /// The password has not been used for `ms` (`password-max-age`).
    case maxAge(ms: Int64)
    /// The password has not been used for `passwordMs` and no finger was accepted for `fingerMs`.
    case idle(passwordMs: Int64, fingerMs: Int64)
    /// The request would start the user's first session (a login): the keyring needs the password.
    case firstSession
    /// The record of the last use cannot be read: nothing can show the password was used.
    case useUnknown
}

/// Why a report that the password was used is not believed (`PasswordReport.decide`).
public enum PasswordReportRefusal: Equatable, Sendable {
    /// The process that opened the connection has exited (its pid may be another's now).
    case connectionOrphaned
    /// A password typed over ssh says nothing about who is at this machine.
    case remoteSession
    /// A user's own process outside any session: a cron job, a user service.
    case noSession
    case notOwnSession
    /// A greeter's or a background session: not where the user types their password.
    case sessionClass(String)
    /// The session is not the one in front on its seat.
    case sessionNotActive
}

/// Why biometrics cannot be used for a request, in a few lowercase words.
public enum ReaderUnavailable: Equatable, Sendable {
    case noReader
    case lidClosed
    case remoteSession
    /// The process that opened the connection has exited (its pid may name another process now).
    case connectionOrphaned
    /// A root caller whose real uid could not be read.
    case requesterUnknown
    /// A root caller in no login session, and not on the virtual terminal in front.
    case noLoginSession
    /// The request is not made by the account it is for (su to another user, another user's
    /// polkit dialog).
    case notTheTargetsSession(String)
    /// The request comes from a session that is not the one in front on its seat.
    case sessionNotInFront(String)
    /// Another request has the reader; `by` says whose (nil: another account's).
    case readerBusy(by: RequestLabel?)
    /// The account's requests have held the reader for their share of the last window.
    case readerShareUsed(account: String, shareMs: Int64, retryInMs: Int64)

    public var english: String {
        switch self {
        case .noReader: "no fingerprint reader is connected"
        case .lidClosed: "the laptop lid is closed and the reader is built in"
        case .remoteSession: "the request comes from a remote session"
        case .connectionOrphaned: "the process that opened this connection has exited; connect again"
        case .requesterUnknown: "the calling process could not be identified"
        case .noLoginSession: "the request comes from no login session and not from the terminal in front"
        case .notTheTargetsSession(let user): "the request is not from \(user)'s own session"
        case .sessionNotInFront(let user): "the request is not from \(user)'s session in front of the reader"
        case .readerShareUsed(let account, let share, let retry):
            "\(account)'s requests have had the reader for \(Phrase.duration(ms: share)) of the last "
                + "\(Phrase.duration(ms: 2 * share)); it is free for others until \(Phrase.duration(ms: retry)) from now"
        case .readerBusy(let by):
            by.map { "the reader is in use by \($0.english); try again when it is done" }
                ?? "the reader is in use by another account's request"
        }
    }
}

/// Whose request a prompt or a busy reader belongs to: the program that asked and the account.
public struct RequestLabel: Equatable, Sendable {
    /// The calling program as the kernel names it (`/proc/<pid>/comm`), else the service it gave.
    public var program: String
    public var account: String

    public init(program: String, account: String) {
        self.program = program
        self.account = account
    }

    /// "sudo for alice"
    public var english: String { "\(program) for \(account)" }
}
