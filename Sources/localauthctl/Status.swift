// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the reader and an account's state.")
    @OptionGroup var connection: ClientOptions
    @OptionGroup var user: UserOption
    func run() throws {
        try connection.run(.status(user: user.user ?? PeerName.current)) { result in
            let f = result.fields
            print("reader present: \(f.bool(.readerPresent) == true ? "yes" : "no")")
            if let n = f.int(.enrolledCount) { print("fingers enrolled: \(n)") }
            if let locked = f.bool(.biometryLocked) { print("biometry locked: \(locked ? "yes" : "no")") }
            if let set = f.bool(.passcodeSet) { print("passcode set: \(set ? "yes" : "no")") }
            if let line = Self.passwordLine(f) { print(line) }
        }
    }

    /// When the finger will be accepted again, and why not now (the "password required" rules).
    static func passwordLine(_ f: Frame) -> String? {
        switch f.int(.passwordRule) {
        case 0?:
            return "finger after restart: accepted (the password-required rules are off: no PAM stack "
                + "has reported a password use; pam_localauth.so in the stack where the password is typed does)"
        case 1?:
            guard let until = f.int(.fingerUntilMs) else { return "finger accepted: yes" }
            return "finger accepted: yes, until \(LocalTime.describe(ms: until)) unless the password is used again"
        case 2?:
            let why = f.string(.passwordReason) ?? "Password required"
            return "finger accepted: no — \(why); it is accepted again once you use your password (or passcode)"
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
        guard localtime_r(&seconds, &parts) != nil else { return "\(ms / 1000) s after the epoch" }
        var buffer = [CChar](repeating: 0, count: 64)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M", &parts)
        return n > 0 ? String(cString: buffer) : "\(ms / 1000) s after the epoch"
    }
}

enum PeerName {
    static var current: String? {
        guard let pw = getpwuid(getuid()), let name = pw.pointee.pw_name else { return nil }
        return String(cString: name)
    }
}
