// SPDX-License-Identifier: Apache-2.0
import LocalAuthDaemon
import LocalAuthSystemd

/// fprintd's Device methods in one table (fprintd's `net.reactivated.Fprint.Device.xml`,
/// `get_claim_state_for_invocation` and `get_permissions_for_invocation`): each one's signature, the
/// claim it needs, the polkit actions of which one must allow it (in fprintd's priority order), the
/// account it names and the daemon operation that acts on it, and what it does. The interface the
/// bus serves, the checks of every call (`receive`, `admitted`) and the dispatch (`perform`) all read
/// this table.
extension FprintdDevice {
    /// Which claim a method needs.
    enum ClaimNeed: Sendable {
        case unclaimed, claimed, autoClaim, anytime
    }

    struct Method: Sendable {
        let member: String
        let signature: String
        let result: String
        let claim: ClaimNeed
        let actions: [Fprintd.Action]
        /// For a method whose first argument names an account (empty: the caller's own): the
        /// daemon's operation on it, which a refusal for another account is audited as.
        let account: Operation?
        /// Runs the call once it has passed the claim, the account rule and polkit: the device, the
        /// call, its caller, the account it names, polkit's allowing answer.
        let perform: @Sendable (FprintdDevice, BusCall, PeerCredentials, String?, PolkitAnswer) -> Void
    }

    static let methods: [Method] = [
        Method(
            member: "ListEnrolledFingers", signature: "s", result: "as", claim: .anytime, actions: [.verify],
            account: .list
        ) { device, call, caller, user, _ in device.list(call, caller: caller, user: user!) },
        Method(
            member: "DeleteEnrolledFingers", signature: "s", result: "", claim: .autoClaim, actions: [.enroll],
            account: .delete
        ) { device, call, caller, user, _ in device.delete(call, caller: caller, user: user!, finger: nil) },
        Method(
            member: "DeleteEnrolledFingers2", signature: "", result: "", claim: .claimed, actions: [.enroll],
            account: nil
        ) { device, call, _, _, _ in
            guard let session = device.session else {
                return device.refuse(call, Fprintd.ErrorName.claimDevice("Device was not claimed"))
            }
            device.delete(call, caller: session.caller, user: session.user, finger: nil)
        },
        Method(
            member: "DeleteEnrolledFinger", signature: "s", result: "", claim: .claimed, actions: [.enroll],
            account: nil
        ) { device, call, _, _, _ in device.deleteOne(call, finger: Fprintd.FingerArgument(call.string(0) ?? "")) },
        Method(
            member: "Claim", signature: "s", result: "", claim: .unclaimed, actions: [.verify, .enroll],
            account: .claimReader
        ) { device, call, caller, user, _ in device.claim(call, caller: caller, user: user!) },
        Method(member: "Release", signature: "", result: "", claim: .claimed, actions: [], account: nil) {
            device, call, _, _, _ in device.release(call)
        },
        Method(member: "VerifyStart", signature: "s", result: "", claim: .claimed, actions: [.verify], account: nil) {
            device, call, _, _, _ in device.verifyStart(call, finger: Fprintd.FingerArgument(call.string(0) ?? ""))
        },
        Method(member: "VerifyStop", signature: "", result: "", claim: .claimed, actions: [], account: nil) {
            device, call, _, _, _ in device.stop(call, kind: .verify)
        },
        Method(member: "EnrollStart", signature: "s", result: "", claim: .claimed, actions: [.enroll], account: nil) {
            device, call, _, _, answer in
            device.enrollStart(call, finger: Fprintd.FingerArgument(call.string(0) ?? ""), polkit: answer)
        },
        Method(member: "EnrollStop", signature: "", result: "", claim: .claimed, actions: [], account: nil) {
            device, call, _, _, _ in device.stop(call, kind: .enroll)
        },
    ]

    private static let byMember = Dictionary(uniqueKeysWithValues: methods.map { ($0.member, $0) })

    static func method(_ member: String) -> Method? { byMember[member] }

    /// The polkit actions of which one must allow `member` (none: no polkit question).
    static func actions(for member: String) -> [Fprintd.Action] { method(member)?.actions ?? [] }
}
