// SPDX-License-Identifier: Apache-2.0
import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// systemd's socket activation (`localauthd.socket`).
public enum SocketActivation {
    /// The first socket systemd passed (`sd_listen_fds`), if it is a Unix stream socket
    /// (`sd_is_socket_unix`); nil when not socket-activated.
    public static func adoptedSocket() -> Int32? {
        let n = sd_listen_fds(1)
        guard n >= 1 else { return nil }
        let fd = SD_LISTEN_FDS_START
        return sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 ? fd : nil
    }
}
