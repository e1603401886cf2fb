// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's own executable in memory (docs/performance.md, memory).
///
/// The static binary is 50 MB (the Swift runtime, SwiftNIO, swift-crypto and ours); starting it
/// maps about 11 MB of its pages, most of them only because the kernel maps 64 kB around each page
/// touched (fault-around) and start-up code runs once. After start those clean, file-backed pages
/// are handed back (`MADV_PAGEOUT`): what stays resident is what serving requests touches again
/// (with the kernel's fault-around, about 6.5 MB after a first request, docs/performance.md).
/// Nothing written is dropped: only the read-only and executable mappings are advised, never the
/// data or the heap, and pages another process maps too stay where they are.
enum ResidentPages {
    /// Advises every read-only or executable mapping of `/proc/self/exe`; returns the bytes advised.
    @discardableResult
    static func releaseExecutableStartupPages() -> Int {
        var path = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &path, path.count - 1)
        guard n > 0 else { return 0 }
        let exe = String(decoding: path[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let maps = fopen("/proc/self/maps", "re") else { return 0 }
        defer { fclose(maps) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        var advised = 0
        while getline(&line, &capacity, maps) > 0, let line {
            // "start-end perms offset dev inode   path"
            let fields = String(cString: line).split(
                omittingEmptySubsequences: true, whereSeparator: { $0 == " " || $0 == "\n" })
            guard fields.count == 6, fields[5] == exe else { continue }
            let perms = fields[1]
            guard perms.hasPrefix("r"), !perms.contains("w") else { continue }
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
                let address = UnsafeMutableRawPointer(bitPattern: start)
            else { continue }
            let length = Int(end - start)
            if madvise(address, length, 21 /* MADV_PAGEOUT, Linux 5.4 */) == 0 { advised += length }
        }
        return advised
    }
}
