// SPDX-License-Identifier: Apache-2.0

/// Client strings that a reply or a log line repeats. Every one is bounded (and an identifier is
/// also escaped) where the message is built, so no client string can make a reply larger than a
/// frame may be (`docs/protocol.md`, "Text a reply repeats").
public enum Echo {
    /// The most characters of a client's identifier (a user or finger name, a simulation word)
    /// that a reply repeats.
    public static let identifierLimit = 64

    /// `value` as one single-quoted token for a human message: quotes, backslashes and control
    /// characters escaped, at most `limit` characters, a cut marked with "…".
    public static func quoted(_ value: String, limit: Int = identifierLimit) -> String {
        "'" + escaped(value, quote: "'", limit: limit) + "'"
    }

    /// `value` with `quote`, backslashes and control characters (C0, DEL and C1) escaped (`\x0a`,
    /// `\x9b`), at most `limit` Unicode scalars of it, a cut marked with "…": it can neither end a
    /// line nor a quoted token.
    public static func escaped(_ value: String, quote: Unicode.Scalar, limit: Int) -> String {
        var out = ""
        for (i, scalar) in value.unicodeScalars.enumerated() {
            if i == limit {
                out += "…"
                break
            }
            switch scalar {
            case quote, "\\": out += "\\" + String(scalar)
            // C1 too (U+0080–U+009F: U+009B is CSI, U+009D OSC): a log viewer may take them as ESC.
            case _ where isControl(scalar):
                out += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// `text` as a client may print it to a terminal: every control character — C0 (tab and line
    /// breaks too), DEL and C1 (U+0080–U+009F, which some terminals take as ESC sequences) — shown as
    /// "�". Text from the daemon repeats names other processes chose (a program's, a right's, a
    /// reason); raw, `\e]0;PWN\a\e[2K` retitled the window and erased the line (issue 26).
    public static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars { out.append(isControl(scalar) ? "\u{FFFD}" : scalar) }
        return String(out)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// Text a person reads (a reason, a button title) cut to at most `maxBytes` bytes of UTF-8 at
    /// a character boundary, "…" marking a cut; unchanged when it fits.
    public static func truncated(_ text: String, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        let ellipsis = "…"
        let budget = maxBytes - ellipsis.utf8.count
        guard budget > 0 else { return "" }
        var out = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > budget { break }
            out.append(character)
            used += size
        }
        return out + ellipsis
    }
}
