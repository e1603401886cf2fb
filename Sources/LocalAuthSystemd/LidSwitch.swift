// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
    import Glibc
#endif

/// The lid as the kernel's ACPI button driver reports it, for machines where logind cannot be asked.
enum LidSwitch {
    /// True when any `DIRECTORY/*/state` says `closed` (`state:      closed`); false without a lid.
    static func closed(directory: String = "/proc/acpi/button/lid") -> Bool {
        guard let dir = opendir(directory) else { return false }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix(".") { continue }
            if let text = readSmallFile(directory + "/" + name + "/state"), text.contains("closed") { return true }
        }
        return false
    }

    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = read(fd, &buffer, buffer.count)
        return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : nil
    }
}
