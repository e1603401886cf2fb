// SPDX-License-Identifier: Apache-2.0
import Foundation

extension Process {
    /// Runs the process with `stdin` written to its standard input, then closed (nil: closed at
    /// once), and waits for it: its exit status, standard output and standard error. With
    /// `mergingErrors` the error goes to `out` too, and `err` is empty.
    package func runToEnd(stdin: String?, mergingErrors: Bool = false) throws -> (
        status: Int32, out: String, err: String
    ) {
        let out = Pipe()
        let err = mergingErrors ? out : Pipe()
        let input = Pipe()
        standardOutput = out
        standardError = err
        standardInput = input
        try run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = mergingErrors ? Data() : err.fileHandleForReading.readDataToEndOfFile()
        waitUntilExit()
        return (terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }
}
