// SPDX-License-Identifier: Apache-2.0
import LocalAuthCore
import LocalAuthProtocol
import Testing

@testable import LocalAuthStore

@Suite struct RecordFormatTests {
    let state = UserAuthState(
        fingerFailures: 3, biometryLocked: true, passcodeFailures: 7, passcodeLockedUntilMs: 1_760_000_900_000,
        lastSeenMs: 1_760_000_000_123, passcodeHash: sampleHash, domainState: Array(0..<32))

    @Test func crc32_matchesTheStandardCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
    }

    @Test func stateRecord_encodeThenDecode_roundTrips() throws {
        #expect(try StateRecord.decode(StateRecord.encode(state)).get() == state)
        #expect(try StateRecord.decode(StateRecord.encode(UserAuthState())).get() == UserAuthState())
    }

    @Test func stateRecord_isVersionedTextWithChecksumLine() throws {
        let text = String(decoding: try StateRecord.encode(state), as: UTF8.self)
        #expect(text.hasPrefix("localauthd-user-state 1\nfingerFailures=3\nbiometryLocked=1\n"))
        #expect(text.contains("\npasscodeHash=\(sampleHash)\n"))
        let last = try #require(text.split(separator: "\n").last)
        #expect(last.hasPrefix("crc32=") && last.count == 14)
    }

    @Test func stateRecord_whenTruncatedAnywhere_isRejected() throws {
        let bytes = try StateRecord.encode(state)
        for length in 0..<bytes.count {
            guard case .failure = StateRecord.decode(Array(bytes[..<length])) else {
                Issue.record("a record truncated to \(length) of \(bytes.count) bytes decoded")
                return
            }
        }
    }

    @Test func stateRecord_whenAnyByteChanged_isRejected() throws {
        let bytes = try StateRecord.encode(state)
        for index in bytes.indices {
            var damaged = bytes
            damaged[index] ^= 0x01
            guard case .failure = StateRecord.decode(damaged) else {
                Issue.record("a record with byte \(index) flipped decoded")
                return
            }
        }
    }

    @Test func stateRecord_whenGarbageOrEmpty_isRejected() {
        let garbage: [[UInt8]] = [[], Array("hello\n".utf8), [UInt8](repeating: 0, count: 200), Array(0...255)]
        for bytes in garbage {
            guard case .failure = StateRecord.decode(bytes) else {
                Issue.record("garbage of \(bytes.count) bytes decoded")
                return
            }
        }
    }

    /// Correctly sealed bodies that break the format: the checksum alone is not the only guard.
    @Test(arguments: [
        "localauthd-user-state 2\nfingerFailures=0\nbiometryLocked=0\npasscodeFailures=0\npasscodeLockedUntilMs=0\nlastSeenMs=0\npasscodeHash=\ndomainState=\n",
        "localauthd-user-state 1\nfingerFailures=01\nbiometryLocked=0\npasscodeFailures=0\npasscodeLockedUntilMs=0\nlastSeenMs=0\npasscodeHash=\ndomainState=\n",
        "localauthd-user-state 1\nfingerFailures=-1\nbiometryLocked=0\npasscodeFailures=0\npasscodeLockedUntilMs=0\nlastSeenMs=0\npasscodeHash=\ndomainState=\n",
        "localauthd-user-state 1\nfingerFailures=0\nbiometryLocked=2\npasscodeFailures=0\npasscodeLockedUntilMs=0\nlastSeenMs=0\npasscodeHash=\ndomainState=\n",
        "localauthd-user-state 1\nbiometryLocked=0\nfingerFailures=0\npasscodeFailures=0\npasscodeLockedUntilMs=0\nlastSeenMs=0\npasscodeHash=\ndomainState=\n",
        "localauthd-user-state 1\nfingerFailures=0\nbiometryLocked=0\npasscodeFailures=0\npasscodeLockedUntilMs=0\nlastSeenMs=0\npasscodeHash=\ndomainState=ABCD\n",
        "localauthd-user-state 1\nfingerFailures=0\nbiometryLocked=0\npasscodeFailures=0\npasscodeLockedUntilMs=0\nlastSeenMs=0\npasscodeHash=\ndomainState=\nextra=1\n",
        "localauthd-user-state 1\nfingerFailures=0\nbiometryLocked=0\npasscodeFailures=0\npasscodeLockedUntilMs=0\nlastSeenMs=0\npasscodeHash=a b\ndomainState=\n",
    ])
    func stateRecord_whenSealedButMalformed_isRejected(body: String) {
        guard case .failure = StateRecord.decode(Seal.seal(Array(body.utf8))) else {
            Issue.record("malformed body decoded")
            return
        }
    }

    @Test func stateRecord_whenHashHasNewline_refusesToEncode() {
        var bad = state
        bad.passcodeHash = "$y$abc\nfingerFailures=0"
        #expect(throws: StoreError.self) { try StateRecord.encode(bad) }
    }

    @Test func printRecord_encodeThenDecode_roundTrips() throws {
        let print = samplePrint()
        let decoded = try PrintRecord.decode(
            PrintRecord.encode(print, sequence: 9), expectedFinger: print.finger, expectedDeviceKey: print.deviceKey
        ).get()
        #expect(decoded == PrintRecord.Decoded(print: print, sequence: 9))
    }

    @Test func printRecord_whenTruncatedAnywhere_isRejected() {
        let print = samplePrint()
        let bytes = PrintRecord.encode(print, sequence: 1)
        for length in 0..<bytes.count {
            guard
                case .failure = PrintRecord.decode(
                    Array(bytes[..<length]), expectedFinger: print.finger, expectedDeviceKey: print.deviceKey)
            else {
                Issue.record("a print truncated to \(length) bytes decoded")
                return
            }
        }
    }

    @Test func printRecord_whenNameDisagreesWithContents_isRejected() {
        let print = samplePrint()
        let bytes = PrintRecord.encode(print, sequence: 1)
        #expect(throws: FormatError.self) {
            try PrintRecord.decode(bytes, expectedFinger: "left-thumb", expectedDeviceKey: print.deviceKey).get()
        }
        #expect(throws: FormatError.self) {
            try PrintRecord.decode(bytes, expectedFinger: print.finger, expectedDeviceKey: "other").get()
        }
    }

    @Test func printFileName_parsesBackOnlyForKnownFingers() {
        let name = PrintRecord.fileName(finger: "left-thumb", deviceKey: "synaptics.usb-3")
        #expect(PrintRecord.parseFileName(name)! == (FingerName.leftThumb, "synaptics.usb-3"))
        #expect(PrintRecord.parseFileName("left-toe@dev.print") == nil)
        #expect(PrintRecord.parseFileName("left-thumb@.hidden.print") == nil)
        #expect(PrintRecord.parseFileName(name + ".corrupt-123") == nil)
        #expect(PrintRecord.parseFileName("state") == nil)
    }
}
