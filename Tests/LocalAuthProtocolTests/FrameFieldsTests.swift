// SPDX-License-Identifier: Apache-2.0
import LocalAuthProtocol
import Testing

/// `Frame.decodeFields` keeps its rules with the seen-tags list that replaced a `Set` (a Set's first
/// use scanned every conformance record of the binary: docs/performance.md, "Cold start and `list`,
/// taken apart"): a single-valued field twice is refused, a repeated one is kept every time, an
/// unknown tag is kept unvalidated.
@Suite struct FrameFieldsTests {
    private func field(_ tag: FieldTag, _ text: String) -> [UInt8] {
        let value = Array(text.utf8)
        return [
            UInt8(tag.rawValue >> 8), UInt8(tag.rawValue & 0xff), UInt8(value.count >> 8), UInt8(value.count & 0xff),
        ]
            + value
    }

    @Test func decodeFields_whenASingleFieldComesTwice_refusesTheFrame() {
        #expect(!FieldTag.user.isRepeated)
        let bytes = field(.user, "alice") + field(.service, "sudo") + field(.user, "bob")
        #expect(throws: ProtocolError.self) { try Frame.decodeFields(bytes[...]) }
    }

    @Test func decodeFields_whenARepeatedFieldComesTwice_keepsBoth() throws {
        #expect(FieldTag.finger.isRepeated)
        let bytes = field(.user, "alice") + field(.finger, "left-thumb") + field(.finger, "right-thumb")
        let fields = try Frame.decodeFields(bytes[...])
        #expect(fields.map(\.tag) == [.user, .finger, .finger])
    }

    @Test func decodeFields_whenEveryKnownSingleFieldComesOnce_keepsThemAll() throws {
        let tags = (1...200).map { FieldTag(rawValue: UInt16($0)) }.filter { $0.kind == .string && !$0.isRepeated }
        let bytes = tags.flatMap { field($0, "x") }
        #expect(try Frame.decodeFields(bytes[...]).count == tags.count)
        #expect(throws: ProtocolError.self) { try Frame.decodeFields((bytes + field(tags[tags.count - 1], "y"))[...]) }
    }

    @Test func decodeFields_whenATagIsUnknown_keepsItTwice() throws {
        let unknown = FieldTag(rawValue: 0x7ff0)
        #expect(unknown.kind == nil)
        let fields = try Frame.decodeFields((field(unknown, "a") + field(unknown, "b"))[...])
        #expect(fields.count == 2)
    }
}
