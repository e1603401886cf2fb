// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
    import Glibc
#endif

/// The fixtures the Swift, C and Python codecs share (`Tests/Fixtures/protocol/`), read in one place.
enum Fixture {
    /// `Tests/Fixtures/protocol/<name>`.
    static func path(_ name: String) -> String {
        String(#filePath.dropLast("LocalAuthProtocolTests/Fixture.swift".count)) + "Fixtures/protocol/" + name
    }

    /// The file's lines, without their line breaks.
    static func lines(_ name: String) -> [String] {
        let path = path(name)
        guard let file = fopen(path, "r") else { fatalError("cannot open \(path)") }
        defer { fclose(file) }
        var lines: [String] = []
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&line, &capacity, file) > 0 {
            lines.append(String(cString: line!).split(separator: "\n").first.map(String.init) ?? "")
        }
        free(line)
        return lines
    }

    /// The lines that are neither empty nor a comment (`#` first).
    static func records(_ name: String) -> [String] {
        lines(name).filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// Two hex digits a byte.
    static func bytes(hex: Substring) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
    }
}
