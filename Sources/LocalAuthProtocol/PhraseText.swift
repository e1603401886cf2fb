// SPDX-License-Identifier: Apache-2.0
// Every phrase in words, through a Translator: English (`EnglishText`, the catalogue's msgids, what
// `Phrase.english` and the daemon's `message`, audit and journal lines say) or the person's language
// (gettext in the clients). The templates here are the catalogue's entries (po/, text domain
// "localauth"); pam/phrases.c renders the same identifiers with the same msgids in C.

/// How a client words what depends on who asks: the fallback of a PAM stack without policy=owner is
/// the account's password, an app's is the localauth passcode.
public struct PhraseStyle: Equatable, Sendable {
    /// After too many fingers, the next step is the account's password (a PAM stack's password
    /// module), not the localauth passcode.
    public var fallbackIsPassword: Bool
    /// The application's name, shown before the reason as Apple does: `"vault" wants to unlock…`.
    public var application: String?

    public init(fallbackIsPassword: Bool = false, application: String? = nil) {
        self.fallbackIsPassword = fallbackIsPassword
        self.application = application
    }
}

extension Phrase {
    /// The phrase in `translator`'s language, worded for `style`.
    public func text(_ t: some Translator, style: PhraseStyle = PhraseStyle()) -> String {
        switch self {
        case .authenticatedWithFinger: t.tr("Authenticated with fingerprint")
        case .authenticatedWithPasscode: t.tr("Authenticated with passcode")
        case .authenticatedByRecentSuccess: t.tr("Authenticated by a recent success")
        case .policyCanBeEvaluated: t.tr("The policy can be evaluated")
        case .fingerNotRecognised: t.tr("Fingerprint not recognised")
        case .userChoseFallback: t.tr("The user chose the fallback")
        case .cancelled(let code):
            switch code {
            case .userCancel: t.tr("Cancelled by the user")
            case .appCancel: t.tr("Cancelled by the application")
            case .systemCancel: t.tr("Cancelled by the system")
            default: t.tr("Cancelled")
            }
        case .timedOutWaitingForFinger: t.tr("Timed out waiting for a fingerprint")
        case .timedOutWaitingForPasscode: t.tr("Timed out waiting for the passcode")
        case .timedOutWaitingForTurn(let user):
            // TRANSLATORS: %s is a user name.
            t.tr("Timed out waiting for another request of %s to finish", .text(user))
        case .interactionNotAllowed: t.tr("Interaction is not allowed")
        case .passcodeNeededButClientCannotAsk: t.tr("A passcode is needed but this client cannot ask for one")
        case .noPasscodeAndNoFinger: t.tr("No passcode is set and no fingerprint can be used")
        case .noPasscodeSet: t.tr("No passcode is set")
        case .noFingerEnrolled: t.tr("No fingerprint is enrolled for this user")
        case .fingersOnDisconnectedReader: t.tr("The fingerprint reader your fingers are enrolled on is not connected")
        case .stateUnreadable: t.tr("Stored authentication state is unreadable; ask an administrator")
        case .stateFromNewerVersion:
            t.tr("Stored authentication state was written by a newer version of localauthd; ask an administrator")
        case .attemptNotRecorded:
            t.tr(
                "The attempt could not be recorded (is the state directory's file system full?); fingerprint and passcode are refused until it can be"
            )
        case .biometryLocked(let passcodeSet):
            if style.fallbackIsPassword {
                // TRANSLATORS: after too many fingers at sudo, su, a locker: the account password follows.
                t.tr("Too many attempts: use your password")
            } else if passcodeSet {
                // TRANSLATORS: after too many fingers in an app: the localauth passcode follows.
                t.tr("Too many attempts: use your passcode")
            } else {
                t.tr("Too many attempts: fingerprint locked")
            }
        case .fingerNotAvailable(let why):
            // TRANSLATORS: %s is one of the reasons ("no fingerprint reader is connected", …).
            t.tr("Fingerprint not available: %s", .text(why.text(t)))
        case .readerFailed(let why):
            // TRANSLATORS: %s is the reader driver's own (English) description of the error.
            t.tr("Fingerprint reader failed: %s", .text(why))
        case .placeFinger(let finger): Self.placeFinger(finger, t)
        case .forRequest(let phrase, let label):
            // TRANSLATORS: a prompt and whose request it is: "Place … on the reader (sudo for alice)".
            t.tr("%s (%s)", .text(phrase.text(t, style: style)), .text(label.text(t)))
        case .noMatch(let left):
            left <= 0
                ? t.tr("Fingerprint not recognised")
                // TRANSLATORS: a finger did not match; %lld more fingers may be tried in this request.
                : t.trn(
                    "Not recognised, try again (%lld left)", "Not recognised, try again (%lld left)", Int64(left),
                    .number(Int64(left)))
        case .enterPasscode: t.tr("Enter your passcode")
        case .wrongPasscode: t.tr("Wrong passcode")
        case .passcodeLocked(let ms):
            // TRANSLATORS: %s is a duration ("45 seconds", "15 minutes").
            t.tr("Passcode locked; try again in %s", .text(Self.duration(ms: ms, t)))
        case .retry(let hint): hint.text(t)
        case .fallbackUsePasscode: t.tr("Use passcode")
        case .fallbackEnterPassword: t.tr("Enter password")
        case .verbatim(let text): text
        case .prompt(let reason, let instruction, let cancel):
            Self.prompt(reason: reason, instruction.text(t, style: style), cancel: cancel, t, style)
        case .both(let first, let second):
            // TRANSLATORS: two lines said at once: "Enter your passcode — Passcode locked; try again in 45 seconds".
            t.tr("%s — %s", .text(first.text(t, style: style)), .text(second.text(t, style: style)))
        // TRANSLATORS: %s is a user name.
        case .passcodeSet(let user): t.tr("Passcode set for %s", .text(user))
        // TRANSLATORS: %s is a user name.
        case .passcodeRemoved(let user): t.tr("Passcode removed for %s", .text(user))
        // TRANSLATORS: %s is a user name.
        case .noPasscodeToRemove(let user): t.tr("%s has no passcode", .text(user))
        case .currentPasscodeNeeded: t.tr("The current passcode is needed")
        case .currentPasscodeWrong: t.tr("The current passcode is wrong")
        case .passcodeNotStored: t.tr("The passcode could not be stored")
        case .passcodeNotHashed: t.tr("The passcode could not be hashed")
        case .firstPasscodeNeedsFinger(let user, let because):
            // TRANSLATORS: %1$s is a user name (keep the command as it is), %2$s why the finger did not count.
            t.tr(
                "A first passcode needs an enrolled finger, or root (sudo localauthctl passcode set --user %1$s): %2$s",
                .text(user), .text(because.text(t, style: style)))
        case .passwordRequired(let reason): reason.text(t)
        case .passwordUseNotRecorded(let refusal): refusal.text(t)
        case .catalogued(let template, let arguments):
            Template.fill(t.text(template), arguments.map { .text($0.text(t, style: style)) })
        case .fingerName(let finger): Self.fingerName(finger, t)
        }
    }

    /// A finger's name on its own, as a sentence uses it after a verb or a name.
    static func fingerName(_ finger: FingerName, _ t: some Translator) -> String {
        switch finger {
        case .leftThumb: t.tr("left thumb")
        case .leftIndex: t.tr("left index finger")
        case .leftMiddle: t.tr("left middle finger")
        case .leftRing: t.tr("left ring finger")
        case .leftLittle: t.tr("left little finger")
        case .rightThumb: t.tr("right thumb")
        case .rightIndex: t.tr("right index finger")
        case .rightMiddle: t.tr("right middle finger")
        case .rightRing: t.tr("right ring finger")
        case .rightLittle: t.tr("right little finger")
        }
    }

    /// "Place your right index finger on the reader": one whole sentence per finger, so that each
    /// language can inflect the finger's name.
    static func placeFinger(_ finger: FingerName?, _ t: some Translator) -> String {
        switch finger {
        case nil: t.tr("Place a finger on the reader")
        case .leftThumb: t.tr("Place your left thumb on the reader")
        case .leftIndex: t.tr("Place your left index finger on the reader")
        case .leftMiddle: t.tr("Place your left middle finger on the reader")
        case .leftRing: t.tr("Place your left ring finger on the reader")
        case .leftLittle: t.tr("Place your left little finger on the reader")
        case .rightThumb: t.tr("Place your right thumb on the reader")
        case .rightIndex: t.tr("Place your right index finger on the reader")
        case .rightMiddle: t.tr("Place your right middle finger on the reader")
        case .rightRing: t.tr("Place your right ring finger on the reader")
        case .rightLittle: t.tr("Place your right little finger on the reader")
        }
    }

    /// `"vault" wants to unlock the vault: Place your right index finger on the reader [Cancel]`, or
    /// without an application's name `Unlock the vault: …`.
    static func prompt(
        reason: String?, _ instruction: String, cancel: String?, _ t: some Translator, _ style: PhraseStyle
    ) -> String {
        var line = instruction
        if let reason, !reason.isEmpty {
            if let app = style.application, !app.isEmpty {
                // TRANSLATORS: Apple's wording: %1$s is the application's name, %2$s its reason
                // ("unlock the vault"), %3$s the instruction ("Place your right index finger on the reader").
                line = t.tr("\"%1$s\" wants to %2$s: %3$s", .text(app), .text(reason), .text(instruction))
            } else {
                // TRANSLATORS: %1$s is the application's reason, %2$s the instruction.
                line = t.tr("%1$s: %2$s", .text(reason), .text(instruction))
            }
        }
        if let cancel, !cancel.isEmpty {
            // TRANSLATORS: a prompt and, in brackets, the application's cancel button's title.
            line = t.tr("%1$s [%2$s]", .text(line), .text(cancel))
        }
        return line
    }

    /// "45 seconds", "1 minute", "15 minutes", "1 hour": rounded up, so the person never retries
    /// too early.
    public static func duration(ms: Int64, _ t: some Translator) -> String {
        let seconds = max((ms / 1000) + (ms % 1000 > 0 ? 1 : 0), 1)
        if seconds < 60 { return t.trn("%lld second", "%lld seconds", seconds, .number(seconds)) }
        let minutes = (seconds + 59) / 60
        if minutes < 60 || minutes % 60 != 0 {
            return t.trn("%lld minute", "%lld minutes", minutes, .number(minutes))
        }
        let hours = minutes / 60
        return t.trn("%lld hour", "%lld hours", hours, .number(hours))
    }
}

extension ReaderUnavailable {
    /// Why biometrics cannot be used, in a few lowercase words.
    public func text(_ t: some Translator) -> String {
        switch self {
        case .noReader: t.tr("no fingerprint reader is connected")
        case .lidClosed: t.tr("the laptop lid is closed and the reader is built in")
        case .remoteSession: t.tr("the request comes from a remote session")
        case .connectionOrphaned: t.tr("the process that opened this connection has exited; connect again")
        case .requesterUnknown: t.tr("the calling process could not be identified")
        case .noLoginSession: t.tr("the request comes from no login session and not from the terminal in front")
        // TRANSLATORS: %s is a user name.
        case .notTheTargetsSession(let user): t.tr("the request is not from %s's own session", .text(user))
        case .sessionNotInFront(let user):
            // TRANSLATORS: %s is a user name.
            t.tr("the request is not from %s's session in front of the reader", .text(user))
        case .readerShareUsed(let account, let share, let retry):
            // TRANSLATORS: %1$s is a user name; %2$s, %3$s and %4$s are durations ("1 minute").
            t.tr(
                "%1$s's requests have had the reader for %2$s of the last %3$s; it is free for others until %4$s from now",
                .text(account), .text(Phrase.duration(ms: share, t)), .text(Phrase.duration(ms: 2 * share, t)),
                .text(Phrase.duration(ms: retry, t)))
        case .readerBusy(let by):
            by.map {
                // TRANSLATORS: %s says whose request it is ("sudo for alice").
                t.tr("the reader is in use by %s; try again when it is done", .text($0.text(t)))
            } ?? t.tr("the reader is in use by another account's request")
        }
    }
}

extension RequestLabel {
    public func text(_ t: some Translator) -> String {
        guard let right else {
            // TRANSLATORS: whose request: %1$s is the program (sudo), %2$s the account (alice).
            return t.tr("%1$s for %2$s", .text(program), .text(account))
        }
        // TRANSLATORS: whose request: %1$s is the program (/usr/bin/python3), %2$s the account (alice),
        // %3$s the identifier of the app's secret or key it asks for (com.example.vault).
        return t.tr("%1$s for %2$s, asking to release %3$s", .text(program), .text(account), .text(right))
    }
}

extension RetryHint {
    /// A bad swipe, in `t`'s language.
    public func text(_ t: some Translator) -> String {
        switch self {
        case .general: t.tr("Try again")
        case .tooShort: t.tr("Swipe was too short, try again")
        case .centerFinger: t.tr("Centre your finger on the reader and try again")
        case .removeFinger: t.tr("Remove your finger and try again")
        }
    }
}

extension PasswordRequiredReason {
    /// Why the password is asked for instead of a finger, in `t`'s language.
    public func text(_ t: some Translator) -> String {
        switch self {
        case .restart: t.tr("Password required after restart")
        case .maxAge(let ms):
            // TRANSLATORS: %s is a duration ("30 days"): the password has not been used for so long.
            t.tr("Password required after %s", .text(Phrase.duration(ms: ms, t)))
        case .idle(let passwordMs, let fingerMs):
            // TRANSLATORS: %1$s and %2$s are durations ("3 days", "8 hours").
            t.tr(
                "Password required: not used for %1$s and no fingerprint for %2$s",
                .text(Phrase.duration(ms: passwordMs, t)), .text(Phrase.duration(ms: fingerMs, t)))
        case .firstSession: t.tr("Password required to start your first session")
        case .useUnknown: t.tr("Password required: its last use could not be read")
        }
    }
}

extension PasswordReportRefusal {
    /// Why a report of the password's use is not believed, in `t`'s language.
    public func text(_ t: some Translator) -> String {
        switch self {
        case .connectionOrphaned:
            t.tr("Password use not recorded: the process that opened this connection has exited")
        case .remoteSession: t.tr("Password use not recorded: it comes from a remote session")
        case .noSession:
            t.tr("Password use not recorded: a user's own report counts only from inside their active local session")
        case .notOwnSession: t.tr("Password use not recorded: it comes from another user's session")
        case .sessionClass(let name):
            // TRANSLATORS: %s is logind's session class, quoted ("greeter").
            t.tr("Password use not recorded: it comes from a session of class %s", .text(Echo.quoted(name)))
        case .sessionNotActive: t.tr("Password use not recorded: the session is not the active one on its seat")
        }
    }
}
