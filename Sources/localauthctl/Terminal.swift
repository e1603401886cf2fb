// SPDX-License-Identifier: Apache-2.0
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// Writes a line to standard error, printable (`Echo.printable`): an error may repeat the daemon's text.
func printError(_ line: String) {
    let text = Echo.printable(line) + "\n"
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
