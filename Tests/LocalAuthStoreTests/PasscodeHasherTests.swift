// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import LocalAuthStore

@Suite struct PasscodeHasherTests {
    @Test func hash_startsWithYescryptPrefix_andVerifiesTheRightPasscode() throws {
        let hash = try PasscodeHasher.hash("correct horse")
        #expect(hash.hasPrefix("$y$"))
        #expect(!hash.contains("correct"))
        #expect(PasscodeHasher.verify("correct horse", hash: hash))
    }

    @Test func verify_whenPasscodeWrong_returnsFalse() throws {
        let hash = try PasscodeHasher.hash("1234")
        #expect(!PasscodeHasher.verify("1235", hash: hash))
        #expect(!PasscodeHasher.verify("12345", hash: hash))
        #expect(!PasscodeHasher.verify("", hash: hash))
    }

    @Test func hash_whenCalledTwice_usesFreshSalts() throws {
        #expect(try PasscodeHasher.hash("same passcode") != PasscodeHasher.hash("same passcode"))
    }

    @Test func attemptToken_isEqualForEqualAttemptsAndDiffersOtherwise() throws {
        let hash = try PasscodeHasher.hash("2468")
        let first = PasscodeHasher.attemptToken("1111", hash: hash)
        #expect(first == PasscodeHasher.attemptToken("1111", hash: hash))
        #expect(first != PasscodeHasher.attemptToken("1112", hash: hash))
        #expect(first.hasPrefix("$y$") && !first.contains("1111"))
        #expect(PasscodeHasher.attemptToken("2468", hash: hash) == hash)
    }

    @Test(arguments: ["", "123", "12\u{0}34", String(repeating: "x", count: 257)])
    func hash_whenPasscodeOutOfRules_throwsInvalidPasscode(passcode: String) {
        #expect {
            try PasscodeHasher.hash(passcode)
        } throws: { error in
            guard case .invalidPasscode = error as? PasscodeError else { return false }
            return true
        }
    }

    @Test func hash_acceptsBoundaryLengthsAndUnicode() throws {
        #expect(PasscodeHasher.verify("1234", hash: try PasscodeHasher.hash("1234")))
        let long = String(repeating: "é", count: 128)  // 256 bytes
        #expect(PasscodeHasher.verify(long, hash: try PasscodeHasher.hash(long)))
    }

    /// "*0"/"*1" are libxcrypt's failure tokens; a DES hash is valid crypt but not ours.
    @Test(arguments: ["", "*0", "*1", "$y$", "$y$!!!", "abJnggxhB/yWI", "$6$salt$hash", "$y$j9T$bad setting"])
    func verify_whenHashUnusable_returnsFalse(hash: String) {
        #expect(!PasscodeHasher.verify("test", hash: hash))
        #expect(!PasscodeHasher.verify("*0", hash: hash))
        #expect(PasscodeHasher.attemptToken("test", hash: hash) == "*")
    }

    @Test func constantTimeEqual_comparesWholeArrays() {
        #expect(PasscodeHasher.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!PasscodeHasher.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!PasscodeHasher.constantTimeEqual([1, 2, 3], [1, 2]))
    }
}
