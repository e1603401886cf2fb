// SPDX-License-Identifier: Apache-2.0
import SSHAgentProtocol
import Testing

private func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = s.startIndex
    while i < s.endIndex {
        let j = s.index(i, offsetBy: 2)
        out.append(UInt8(s[i..<j], radix: 16)!)
        i = j
    }
    return out
}

private func frame(_ body: [UInt8]) -> [UInt8] {
    var w = SSHWriter()
    w.string(body)
    return w.bytes
}

@Suite struct AgentCodecTests {
    // A key made by OpenSSH's ssh-keygen (-t ecdsa -b 256 -C c), its point, line and fingerprint.
    static let point = hex(
        "046bd48efb3ac607d5aa34861f13168ee6340dcd46383b3aa805f9e74558432c7d4a2b12664452537a21246c7a99e03c9af7720c177bf9c3e0a54887a76919a575"
    )
    static let line =
        "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBGvUjvs6xgfVqjSGHxMWjuY0Dc1GODs6qAX550VYQyx9SisSZkRSU3ohJGx6meA8mvdyDBd7+cPgpUiHp2kZpXU= c"

    @Test func publicKeyLine_isOpenSSHsOwnLine() {
        #expect(SSHECDSAKey.publicKeyLine(x963: Self.point, comment: "c") == Self.line)
        #expect(SSHECDSAKey.point(blob: SSHECDSAKey.blob(x963: Self.point)) == Self.point)
    }

    @Test func fingerprint_isSshKeygensFingerprint() {
        #expect(
            SHA256.fingerprint(blob: SSHECDSAKey.blob(x963: Self.point))
                == "SHA256:ZLcPNZ4FIPz4y0ynaEBI0aOy28i8YC4jAFfhL2f10J8")
        #expect(
            SHA256.hash(Array("abc".utf8))
                == hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        // Two blocks of padding (55 … 64 bytes cross the boundary).
        #expect(
            SHA256.hash([UInt8](repeating: 0x61, count: 56))
                == hex("b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"))
    }

    @Test func base64_roundTrips() {
        for n in 0..<10 {
            let bytes = (0..<n).map { UInt8($0 * 37 & 0xff) }
            #expect(Base64.decode(Base64.encode(bytes)[...]) == bytes)
        }
        #expect(Base64.decode("a*b") == nil)
    }

    @Test func derSignature_becomesTwoMpints() {
        // r with its high bit set carries DER's leading zero, which is the mpint's too; s is short.
        let r = [0x00, 0x80] + [UInt8](repeating: 1, count: 31)
        let s: [UInt8] = [0x7f, 0x02]
        let der: [UInt8] = [0x30, UInt8(2 + r.count + 2 + s.count), 0x02, UInt8(r.count)] + r + [0x02, 2] + s
        var inner = SSHWriter()
        inner.string(r)
        inner.string(s)
        var expected = SSHWriter()
        expected.string("ecdsa-sha2-nistp256")
        expected.string(inner.bytes)
        #expect(SSHECDSAKey.signatureBlob(der: der) == expected.bytes)
        #expect(SSHECDSAKey.signatureBlob(der: der + [0]) == nil)
        #expect(SSHECDSAKey.signatureBlob(der: [0x30, 0x02, 0x02, 0x00]) == nil)
        #expect(SSHECDSAKey.signatureBlob(der: []) == nil)
    }

    @Test func requests_decodeAndReencode() throws {
        let bind = SessionBind(hostKey: [1, 2], sessionIdentifier: [3], signature: [4, 5, 6], isForwarding: true)
        let requests: [AgentRequest] = [
            .requestIdentities, .sign(keyBlob: [9, 9], data: [1, 2, 3], flags: 2), .sessionBind(bind),
            .otherExtension(name: "query"), .addIdentity(constrained: false), .addIdentity(constrained: true),
            .unsupported(number: 22), .unknown(number: 200),
        ]
        for request in requests {
            #expect(try AgentRequest(frame: request.encoded) == request)
        }
    }

    @Test func malformedRequests_throwAndNeverTrap() {
        // A sign request cut short, one with bytes after its flags, a string longer than the frame.
        #expect(throws: AgentCodecError.self) { try AgentRequest(frame: [13, 0, 0, 0, 1]) }
        #expect(throws: AgentCodecError.self) {
            try AgentRequest(frame: AgentRequest.sign(keyBlob: [], data: [], flags: 0).encoded + [0])
        }
        #expect(throws: AgentCodecError.self) { try AgentRequest(frame: [13, 0xff, 0xff, 0xff, 0xff]) }
        #expect(throws: AgentCodecError.self) { try AgentRequest(frame: [11, 0]) }
        #expect(throws: AgentCodecError.self) { try AgentRequest(frame: []) }
    }

    @Test func frameReader_splitsAndBounds() throws {
        var reader = AgentFrameReader()
        let two = frame([11]) + frame([13, 1])
        reader.append(two.prefix(3))
        #expect(try reader.next() == nil)
        reader.append(two.dropFirst(3))
        #expect(try reader.next() == [11])
        #expect(try reader.next() == [13, 1])
        #expect(try reader.next() == nil)
        reader.append([0x00, 0x04, 0x00, 0x01])  // 256 KiB + 1
        #expect(throws: AgentCodecError.frameTooLarge(AgentFrameReader.maxFrame + 1)) { try reader.next() }
    }

    @Test func responses_roundTrip() throws {
        let answers: [AgentResponse] = [
            .failure, .success, .identities([AgentIdentity(keyBlob: [1], comment: "localauth:a")]), .signature([7, 7]),
        ]
        for answer in answers {
            var reader = AgentFrameReader()
            reader.append(answer.frame)
            #expect(try AgentResponse(body: try #require(try reader.next())) == answer)
        }
    }

    @Test func signedData_namesWhatItIsFor() {
        /// SSH_MSG_USERAUTH_REQUEST as a client signs it: session id, 50, user, service, method, TRUE.
        func userAuthentication(user: String, method: String) -> [UInt8] {
            var request = SSHWriter()
            request.string([1, 2, 3])
            request.byte(50)
            request.string(user)
            request.string("ssh-connection")
            request.string(method)
            request.byte(1)
            return request.bytes
        }
        #expect(
            SignedDataKind(data: userAuthentication(user: "alice", method: "publickey"))
                == .userAuthentication(user: "alice"))
        // What OpenSSH 9 signs once it has bound the connection to the host (session-bind).
        #expect(
            SignedDataKind(data: userAuthentication(user: "bob", method: "publickey-hostbound-v00@openssh.com"))
                == .userAuthentication(user: "bob"))
        var sig = SSHWriter()
        sig.string("git")
        #expect(SignedDataKind(data: Array("SSHSIG".utf8) + sig.bytes) == .sshsig(namespace: "git"))
        #expect(SignedDataKind(data: [1, 2]) == .other)
    }

    @Test func knownHosts_plainNameElseNothing() {
        let blob = SSHECDSAKey.blob(x963: Self.point)
        let key = Base64.encode(blob)
        #expect(
            hostName(
                forKey: blob,
                knownHosts: "# c\nother,1.2.3.4 ssh-ed25519 AAAA\nhost.example,10.0.0.1 ecdsa-sha2-nistp256 \(key)\n")
                == "host.example")
        #expect(hostName(forKey: blob, knownHosts: "|1|abc=|def= ecdsa-sha2-nistp256 \(key)\n") == nil)
        #expect(hostName(forKey: blob, knownHosts: "@revoked bad ecdsa-sha2-nistp256 \(key)\n") == nil)
        #expect(
            hostName(forKey: blob, knownHosts: "[127.0.0.1]:2222 ecdsa-sha2-nistp256 \(key)\n") == "[127.0.0.1]:2222")
    }
}
