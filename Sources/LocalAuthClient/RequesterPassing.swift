// SPDX-License-Identifier: Apache-2.0
import DescriptorPassing
import LocalAuthProtocol

extension DaemonConnection {
    /// REQUESTER (docs/protocol.md, "The requester"): the next request is made for the process of
    /// `pidfd` (an ssh agent's client), which the daemon reads itself and names in the prompt before
    /// this program. Sends REQUESTER, waits for DESCRIPTOR_WANTED, then one byte carrying the pidfd
    /// (`SCM_RIGHTS`). A refusal (the process exited, is another account's) is the daemon's ERROR.
    public func passRequester(pidfd: Int32, timeoutMs: Int64 = 5000) throws(ClientError) {
        try send(Frame(.requester))
        switch try receive(deadline: Self.now() + timeoutMs) {
        case .descriptorWanted: break
        case .error(let code, let message): throw .refused(code: code, message: message)
        // English: a protocol detail
        default: throw .protocolError("expected DESCRIPTOR_WANTED")
        }
        guard DescriptorPassing.send(pidfd, over: fd) else { throw .disconnected }
    }
}
