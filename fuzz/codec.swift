// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the Swift codec (Sources/LocalAuthProtocol), compiled into one module
// with the codec's sources by `swiftc -sanitize=fuzzer,address -parse-as-library` (fuzz/fuzz.mk).
// Beyond "no crash": every frame the reader yields re-encodes to the bytes it came from, and
// every typed message decoded from it survives its own encoding unchanged.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCodec(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var reader = FrameReader()
    let frames = readInTwo(input, append: { reader.append($0) }, next: { try reader.next() })
    var consumed = 0
    for frame in frames {
        let bytes = frame.encoded()
        guard input.count >= consumed + bytes.count, Array(input[consumed..<consumed + bytes.count]) == bytes
        else { fatalError("frame \(frame.type) does not re-encode to its own bytes") }
        consumed += bytes.count
        checkTyped(frame)
    }
    return 0
}

/// Typed decoding: whatever is accepted encodes to a frame that decodes to the same value.
private func checkTyped(_ frame: Frame) {
    if let request = try? Request(frame: frame) {
        let again = roundTrip(request.frame)
        guard (try? Request(frame: again)) == request else { fatalError("Request round trip: \(request)") }
    }
    if let message = try? ServerMessage(frame: frame) {
        let again = roundTrip(message.frame)
        guard (try? ServerMessage(frame: again)) == message else { fatalError("ServerMessage round trip: \(message)") }
    }
    if let hello = try? Hello(frame: frame) {
        guard (try? Hello(frame: roundTrip(hello.frame))) == hello else { fatalError("Hello round trip: \(hello)") }
    }
}

/// A frame through bytes and back; the encoder's own output must always decode.
private func roundTrip(_ frame: Frame) -> Frame {
    var reader = FrameReader()
    reader.append(frame.encoded())
    guard let decoded = try? reader.next() else { fatalError("own encoding of \(frame.type) refused") }
    return decoded
}
