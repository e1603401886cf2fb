// SPDX-License-Identifier: Apache-2.0
import Glibc

/// What `fstat`/`lstat` told us about a file, without C types.
struct FileInfo: Equatable {
    static let typeMask: UInt32 = 0o170000
    static let regularType: UInt32 = 0o100000
    static let directoryType: UInt32 = 0o040000
    static let symlinkType: UInt32 = 0o120000

    var mode: UInt32
    var owner: UInt32
    var size: Int

    init(_ st: stat) {
        mode = UInt32(st.st_mode)
        owner = UInt32(st.st_uid)
        size = Int(st.st_size)
    }

    var isRegularFile: Bool { mode & Self.typeMask == Self.regularType }
    var isDirectory: Bool { mode & Self.typeMask == Self.directoryType }
    var isSymlink: Bool { mode & Self.typeMask == Self.symlinkType }
    /// The permission bits, e.g. `0o600`.
    var permissions: UInt32 { mode & 0o7777 }
}

/// The result of reading a file the store owns.
enum ReadOutcome {
    case missing
    case bytes([UInt8], FileInfo)
    /// The file exists but could not be read as a regular file (a symlink, a FIFO, EIO, too large…).
    case unreadable(String)
}

/// Every system call the store makes goes through here: `EINTR` is retried in one place and a
/// failure becomes `StoreError.io` once, naming the operation and the path.
enum Sys {
    static func describe(errno code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return "\(String(cString: text)) (errno \(code))"
    }

    /// Calls `body` until it returns something other than -1 with `EINTR`; -1 otherwise throws.
    @discardableResult
    static func call<T: FixedWidthInteger>(_ what: @autoclosure () -> String, _ body: () -> T) throws(StoreError) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code == EINTR { continue }
            throw .io(what(), errno: code)
        }
    }

    /// `close(2)` without retry: on Linux the descriptor is gone even when close reports `EINTR`.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// `lstat(2)`; nil when the path does not exist.
    static func lstatInfo(_ path: String) throws(StoreError) -> FileInfo? {
        try fileInfo(path, "lstat") { lstat($0, &$1) }
    }

    /// `stat(2)` (follows symlinks); nil when the path does not exist.
    static func statInfo(_ path: String) throws(StoreError) -> FileInfo? {
        try fileInfo(path, "stat") { stat($0, &$1) }
    }

    /// `call` (`stat` or `lstat`) retried on `EINTR`; nil when the path does not exist.
    private static func fileInfo(
        _ path: String, _ name: String, _ call: (String, inout stat) -> Int32
    ) throws(StoreError) -> FileInfo? {
        var st = stat()
        while call(path, &st) == -1 {
            let code = errno
            if code == EINTR { continue }
            if code == ENOENT || code == ENOTDIR { return nil }
            throw .io("\(name) \(path)", errno: code)
        }
        return FileInfo(st)
    }

    /// `mkdir(2)` with mode 0700 then `chmod(2)` so the umask cannot change it; false if it existed.
    static func makeDirectory(_ path: String) throws(StoreError) -> Bool {
        while mkdir(path, 0o700) == -1 {
            let code = errno
            if code == EINTR { continue }
            if code == EEXIST { return false }
            throw .io("mkdir \(path)", errno: code)
        }
        try call("chmod \(path)") { chmod(path, 0o700) }
        return true
    }

    /// Opens a directory and `fsync(2)`s it, making renames and unlinks inside it durable.
    static func syncDirectory(_ path: String) throws(StoreError) {
        let fd = try call("open directory \(path)") { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(fd) }
        try call("fsync directory \(path)") { fsync(fd) }
    }

    /// The names in a directory (`opendir(3)`/`readdir(3)`), without `.` and `..`, sorted.
    static func listDirectory(_ path: String) throws(StoreError) -> [String] {
        guard let dir = opendir(path) else { throw .io("opendir \(path)", errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(dir) else {
                if errno != 0 { throw .io("readdir \(path)", errno: errno) }
                break
            }
            let name = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                String(cString: UnsafeRawPointer(tuple).assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Reads a regular file of at most `limit` bytes. `O_NOFOLLOW` refuses symlinks and `O_NONBLOCK`
    /// keeps a planted FIFO from hanging the daemon; `fstat` on the open descriptor gives the owner
    /// and mode of exactly the bytes read.
    static func readFile(_ path: String, limit: Int) -> ReadOutcome {
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) } while fd == -1 && errno == EINTR
        if fd == -1 {
            let code = errno
            if code == ENOENT { return .missing }
            if code == ELOOP { return .unreadable("is a symbolic link") }
            return .unreadable("open: \(describe(errno: code))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .unreadable("fstat: \(describe(errno: errno))") }
        let info = FileInfo(st)
        guard info.isRegularFile else { return .unreadable("not a regular file") }
        guard info.size <= limit else { return .unreadable("\(info.size) bytes, more than the limit of \(limit)") }
        // Read to EOF rather than trusting st_size, so a file that shrinks or grows is still caught.
        var bytes = [UInt8](repeating: 0, count: info.size + 1)
        var count = 0
        while true {
            if count == bytes.count {
                guard bytes.count <= limit else { return .unreadable("grew beyond the limit of \(limit) bytes") }
                bytes.append(contentsOf: repeatElement(0, count: 4096))
            }
            let n = bytes.withUnsafeMutableBytes { buffer in
                read(fd, buffer.baseAddress! + count, buffer.count - count)
            }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                return .unreadable("read: \(describe(errno: errno))")
            }
            count += n
        }
        guard count <= limit else { return .unreadable("more than the limit of \(limit) bytes") }
        bytes.removeSubrange(count...)
        return .bytes(bytes, info)
    }

    /// `write(2)` until every byte is written.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(StoreError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in write(fd, buffer.baseAddress! + offset, buffer.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io("write \(path)", errno: errno)
            }
            offset += n
        }
    }

    static func rename(_ from: String, _ to: String) throws(StoreError) {
        try call("rename \(from) to \(to)") { Glibc.rename(from, to) }
    }

    static func unlink(_ path: String) throws(StoreError) {
        try call("unlink \(path)") { Glibc.unlink(path) }
    }

    /// Wall-clock milliseconds, used only to name files set aside for the administrator.
    static func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// The effective uid: files must be owned by it (root for the daemon, the tester in tests).
    static var effectiveUser: UInt32 { UInt32(geteuid()) }
}
