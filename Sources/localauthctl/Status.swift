// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthLocalization
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("Show the reader and an account's state."))
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    func run() throws {
        try connection.run(.status(user: user.user ?? PeerName.current), print: Self.show)
    }

    static func show(_ result: RequestResult) {
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
        return n > 0
            ? String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            : "\(ms / 1000) s after the epoch"  // English: as above
    }
}

enum PeerName {
    static var current: String? {
        guard let pw = getpwuid(getuid()), let name = pw.pointee.pw_name else { return nil }
        return String(cString: name)
    }
}
