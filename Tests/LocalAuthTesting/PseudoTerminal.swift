// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A pseudo-terminal pair: the test holds the primary side, the program gets the secondary side.
package final class PseudoTerminal {
    package let primary: Int32
    package private(set) var secondary: Int32
    private var seen: [UInt8] = []

    package init() throws {
        // posix_openpt and friends need _XOPEN_SOURCE, which the Glibc module lacks: the ioctls they wrap.
        let unlock: UInt = 0x4004_5431  // TIOCSPTLCK
        let number: UInt = 0x8004_5430  // TIOCGPTN
        primary = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var locked: Int32 = 0
        var index: Int32 = 0
        guard primary >= 0, ioctl(primary, unlock, &locked) == 0, ioctl(primary, number, &index) == 0 else {
            throw HarnessError.setup("no pseudo-terminal")
        }
        secondary = open("/dev/pts/\(index)", O_RDWR | O_NOCTTY)
        guard secondary >= 0 else { throw HarnessError.setup("cannot open /dev/pts/\(index)") }
    }

    /// Types `line` and Enter, and reads until `marker`.
    package func command(_ line: String, until marker: String) throws -> String {
        write(line + "\n")
        return try read(until: marker)
    }

    package func closeSecondary() {
        if secondary >= 0 { close(secondary) }
        secondary = -1
    }

    deinit {
        closeSecondary()
        close(primary)
    }

    package func write(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(primary, $0.baseAddress, $0.count) }
    }

    /// Everything the program wrote since the last call, up to and including `marker`. The 30 s
    /// bound only ends a hang (a marker that never comes): a slow machine's run is not cut short.
    package func read(until marker: String) throws -> String {
        let deadline = Date().addingTimeInterval(30)
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let text = String(decoding: seen, as: UTF8.self)
            if let range = text.range(of: marker) {
                let upTo = String(text[..<range.upperBound])
                seen = Array(text[range.upperBound...].utf8)
                return upTo
            }
            let left = Int32(deadline.timeIntervalSinceNow * 1000)
            guard left > 0 else { throw HarnessError.setup("'\(marker)' never came; the terminal showed: \(text)") }
            var pfd = pollfd(fd: primary, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, left) > 0 else { continue }
            let n = Glibc.read(primary, &buffer, buffer.count)
            guard n > 0 else { throw HarnessError.setup("the terminal closed; it showed: \(text)") }
            seen += buffer[0..<n]
        }
    }

    /// Everything the program wrote since the last call, until every holder of the secondary side
    /// has closed it (the program exited; call `closeSecondary` first). 60 s at most: a hang's bound.
    package func readToEnd() throws -> String {
        let deadline = Date().addingTimeInterval(60)
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let left = Int32(deadline.timeIntervalSinceNow * 1000)
            guard left > 0 else {
                throw HarnessError.setup(
                    "the terminal stayed open; it showed: \(String(decoding: seen, as: UTF8.self))")
            }
            var pfd = pollfd(fd: primary, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, left) > 0 else { continue }
            let n = Glibc.read(primary, &buffer, buffer.count)
            guard n > 0 else { break }  // EIO: no secondary side is open any more
            seen += buffer[0..<n]
        }
        defer { seen = [] }
        return String(decoding: seen, as: UTF8.self)
    }
}
