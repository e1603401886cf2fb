// SPDX-License-Identifier: Apache-2.0
// Shared by the Swift fuzz targets (fuzz/codec.swift, fuzz/agent.swift; fuzz/fuzz.mk compiles it
// into each): the input as a socket may deliver it, in two reads.

/// What a frame reader yields from `input` delivered in two reads, split where the first byte says.
/// A refused frame ends the stream; what came before it is returned and must still hold up.
func readInTwo<Item>(
    _ input: [UInt8], append: (ArraySlice<UInt8>) -> Void, next: () throws -> Item?
) -> [Item] {
    let split = input.isEmpty ? 0 : Int(input[0]) % (input.count + 1)
    var items: [Item] = []
    append(input[..<split])
    do {
        while let item = try next() { items.append(item) }
        append(input[split...])
        while let item = try next() { items.append(item) }
    } catch {
        // Refused input is fine; what was accepted before it must still hold up.
    }
    return items
}
