// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the ssh agent codec (Sources/SSHAgentProtocol), compiled into one module
// with its sources by `swiftc -sanitize=fuzzer,address -parse-as-library` (fuzz/fuzz.mk).
// Beyond "no crash": every request decoded survives its own encoding unchanged, a frame reader
// never yields more bytes than it was given, and the DER and signed-data readers never trap.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAgentCodec(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var reader = AgentFrameReader()
    let bodies = readInTwo(input, append: { reader.append($0) }, next: { try reader.next() })
    guard bodies.reduce(0, { $0 + 4 + $1.count }) <= input.count else { fatalError("frames longer than the input") }
    for body in bodies {
        if let request = try? AgentRequest(frame: body) {
            guard (try? AgentRequest(frame: request.encoded)) == request else { fatalError("round trip: \(request)") }
        }
        if let answer = try? AgentResponse(body: body) {
            var again = AgentFrameReader()
            again.append(answer.frame)
            guard let b = try? again.next(), (try? AgentResponse(body: b)) == answer else {
                fatalError("answer round trip: \(answer)")
            }
        }
        _ = SSHECDSAKey.signatureBlob(der: body)
        _ = SSHECDSAKey.point(blob: body)
        _ = SignedDataKind(data: body)
    }
    _ = hostName(forKey: Array(input.prefix(8)), knownHosts: String(decoding: input, as: UTF8.self))
    return 0
}
