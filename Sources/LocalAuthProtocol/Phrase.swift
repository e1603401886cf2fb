// SPDX-License-Identifier: Apache-2.0

/// Every line the policy core says to a person, as an identifier and its arguments.
///
/// The core decides *what* to say; `english` is the one place that says it in English. The daemon
/// sends both: the English `message` and the phrase (`phrase` field, PhraseWire.swift), which each
/// client renders in its own language (PhraseText.swift).
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
    /// The stored state is a newer localauthd's (a downgrade): refused as unreadable, said as what it is.
    case stateFromNewerVersion
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

    // Everything else the daemon says to a person (management answers, rights).
    /// A line of the catalogue: its English template in C's printf syntax (`%s`, `%1$s`), filled with
    /// the arguments rendered in the same language. Written `Phrase.said("…", …)`, which marks the
    /// template for the catalogue (xgettext keyword `said`).
    case catalogued(String, [Phrase])
    /// A finger's name on its own: "right index finger".
    case fingerName(FingerName)

    /// A line of the catalogue with its arguments (`.verbatim` for a name, `.fingerName` for a finger).
    public static func said(_ template: StaticString, _ arguments: Phrase...) -> Phrase {
        .catalogued(template.description, arguments)
    }

    /// The phrase in English: the catalogue's msgids (PhraseText.swift), as the daemon's `message`,
    /// audit and journal lines say it.
    public var english: String { text(EnglishText()) }

    /// "45 seconds", "1 minute", "15 minutes", "1 hour": rounded up, so the person never retries
    /// too early.
    public static func duration(ms: Int64) -> String { duration(ms: ms, EnglishText()) }
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

    public var english: String { text(EnglishText()) }
}

/// Whose request a prompt or a busy reader belongs to: the program that asked, the account, and
/// for a right's use the right it would release.
public struct RequestLabel: Equatable, Sendable {
    /// The calling program by what it cannot choose (`Whereabouts.programName`: a setuid-root
    /// program's kernel name, another's executable, or "a program calling itself 'x'"), else the
    /// service a client in the daemon's own process gave.
    public var program: String
    public var account: String
    /// The identifier of the right a RIGHT_USE would release or use; nil for every other request.
    public var right: String?

    public init(program: String, account: String, right: String? = nil) {
        self.program = program
        self.account = account
        self.right = right
    }

    /// "sudo for alice", "/usr/bin/python3.11 for alice, asking to release com.example.vault"
    public var english: String { text(EnglishText()) }
}
