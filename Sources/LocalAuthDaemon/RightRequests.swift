// SPDX-License-Identifier: Apache-2.0
import LocalAuthCore
import LocalAuthCrypto
import LocalAuthProtocol
import LocalAuthStore

/// Apple's `LARightStore` and `LAPersistedRight`: an app's secret and P-256 key per user and
/// identifier. The secret is returned, and the private key used, only inside a RIGHT_USE whose own
/// evaluation of the right's requirement succeeded — the same `EvaluationRun` and rules as every
/// EVALUATE, never a reuse window. The private key never leaves the daemon. Runs in the account's
/// turn (`UserQueue`), so an enrolment cannot change the set between the evaluation and the use.
struct RightRequests {
    let parts: DaemonParts

    /// RIGHT_SAVE: a fresh key, the secret when given; never replaces an existing right.
    nonisolated(nonsending) func save(
        user: String, identifier: String, requirement: RightRequirement, secret: [UInt8]?
    ) async -> Answer {
        guard StoredRight.isValidIdentifier(identifier) else {
            return Answer(.invalidRequest, RightMessages.badIdentifier)
        }
        guard (secret?.count ?? 0) <= StoredRight.maximumSecretSize else {
            return Answer(.invalidRequest, RightMessages.secretTooLarge)
        }
        var domainState: [UInt8] = []
        if requirement == .biometryCurrentSet {
            // Bound to the set enrolled now: there must be one.
            let loaded = parts.loadState(user)
            guard loaded.readable else { return Answer(.internalError, RightMessages.stateUnreadable) }
            let prints = (try? parts.store.allPrints(user: user)) ?? []
            guard !prints.isEmpty, !loaded.state.domainState.isEmpty else {
                return Answer(.biometryNotEnrolled, RightMessages.noSetToBindTo)
            }
            domainState = loaded.state.domainState
        }
        let privateKey = RightKeys.generatePrivateKey()
        let right = StoredRight(
            identifier: identifier, requirement: Self.stored(requirement), domainState: domainState,
            secret: secret ?? [], privateKey: privateKey, createdAtMs: parts.clock())
        do {
            try parts.store.saveRight(right, user: user)
        } catch .alreadyExists {
            return Answer(.alreadyEnrolled, RightMessages.exists)
        } catch .limitReached {
            return Answer(.invalidRequest, RightMessages.tooMany)
        } catch {
            parts.audit.notice("cannot save a right of \(user): \(error)")
            return Answer(.internalError, RightMessages.cannotSave)
        }
        return Answer(.success, RightMessages.saved, publicFacts(right))
    }

    /// RIGHT_GET: the requirement and the public key; nothing secret, no evaluation.
    nonisolated(nonsending) func get(user: String, identifier: String) async -> Answer {
        switch load(user: user, identifier: identifier) {
        case .failure(let box): return box.result
        case .success(let right): return Answer(.success, RightMessages.found, publicFacts(right))
        }
    }

    /// RIGHT_REMOVE: one right, or all of the account's (identifier nil).
    nonisolated(nonsending) func remove(user: String, identifier: String?) async -> Answer {
        do {
            if let identifier {
                try parts.store.removeRight(identifier: identifier, user: user)
                return Answer(.success, RightMessages.removed)
            }
            let count = try parts.store.removeAllRights(user: user)
            return Answer(.success, RightMessages.removedAll(count))
        } catch .notFound {
            return Answer(.notFound, RightMessages.notFound)
        } catch {
            parts.audit.notice("cannot remove a right of \(user): \(error)")
            return Answer(.internalError, RightMessages.cannotRemove)
        }
    }

    /// RIGHT_USE: the requirement's evaluation (`evaluate`: the daemon's one evaluation path), then,
    /// only on its success, the operation. A successful `authorize` is held for the calling process
    /// (`holder`, `RightGrants`): that process's later operations on the same right skip the
    /// evaluation until `deauthorize`, as an authorized `LAPersistedRight` on Apple's systems.
    nonisolated(nonsending) func use(
        _ options: RightUseOptions, user: String, holder: RightGrants.Holder? = nil,
        evaluate: (EvaluateOptions) async -> Answer
    ) async -> Answer {
        if options.operation == .deauthorize { return deauthorize(holder) }
        let right: StoredRight
        switch load(user: user, identifier: options.identifier) {
        case .failure(let box): return box.result
        case .success(let r): right = r
        }
        // Refuse a malformed operation before anyone is asked for a finger.
        if let problem = Self.problem(options, right: right) { return Answer(.invalidRequest, problem) }
        let granted =
            options.operation != .authorize
            && holder.map { parts.grants.holds($0, privateKey: right.privateKey) } == true
        if !granted {
            let evaluation = await evaluate(options.evaluation(for: Self.wire(right.requirement), user: user))
            guard evaluation.isSuccess else {
                if options.operation == .authorize, let holder { parts.grants.revoke(holder) }
                return evaluation
            }
        }
        if right.requirement == .biometryCurrentSet {
            // The user's turn keeps enrolments out, but a set changed by a corrupt print being set
            // aside during the scan still counts: check again, fail closed.
            guard case .ok = (try? parts.store.loadRight(identifier: right.identifier, user: user)) else {
                return Answer(.notFound, RightMessages.invalidated)
            }
        }
        do throws(KeyError) {
            let output: [UInt8]
            switch options.operation {
            // LARight.authorize of a persisted right: its secret comes with the authorization, as an
            // authorized LAPersistedRight's secret loads without asking again.
            case .authorize:
                output = right.secret
                if let holder { parts.grants.grant(holder, privateKey: right.privateKey, nowMs: parts.clock()) }
            case .loadSecret: output = right.secret
            case .deauthorize: output = []
            case .sign:
                output = try RightKeys.sign(
                    options.data ?? [], privateKey: right.privateKey, algorithm: algorithm(options)!)
            case .decrypt:
                output = try RightKeys.decrypt(
                    options.data ?? [], privateKey: right.privateKey, algorithm: algorithm(options)!)
            case .exchangeKeys:
                output = try RightKeys.exchange(
                    privateKey: right.privateKey, peerPublicKey: options.data ?? [], algorithm: algorithm(options)!,
                    requestedSize: Int(options.requestedSize ?? 32), sharedInfo: options.sharedInfo ?? [])
            }
            // An authorization without a secret carries no data at all.
            let data: Answer.Payload = options.operation != .authorize || !output.isEmpty ? .data(output) : .none
            return Answer(.success, RightMessages.used(options.operation), data)
        } catch {
            return Answer(.invalidRequest, Phrase.said("The operation failed: %s", .verbatim("\(error)")))
        }
    }

    /// RIGHT_USE `deauthorize`: the calling process no longer holds the right's authorization.
    func deauthorize(_ holder: RightGrants.Holder?) -> Answer {
        if let holder { parts.grants.revoke(holder) }
        return Answer(.success, RightMessages.used(.deauthorize))
    }

    // MARK: - Helpers

    private func algorithm(_ options: RightUseOptions) -> KeyAlgorithm? {
        options.algorithm.flatMap(KeyAlgorithm.init(rawValue:))
    }

    /// Why the operation cannot be done whatever the person answers, or nil.
    static func problem(_ options: RightUseOptions, right: StoredRight) -> Phrase? {
        let use: KeyAlgorithm.Use
        switch options.operation {
        case .authorize, .deauthorize: return nil
        case .loadSecret: return right.secret.isEmpty ? RightMessages.noSecret : nil
        case .sign: use = .sign
        case .decrypt: use = .decrypt
        case .exchangeKeys: use = .keyExchange
        }
        guard let name = options.algorithm, let algorithm = KeyAlgorithm(rawValue: name) else {
            return Phrase.said("'%s' is not an algorithm this key offers", .verbatim(options.algorithm ?? ""))
        }
        guard algorithm.supports(use) else {
            return Phrase.said("%s cannot be used for this operation", .verbatim(name))
        }
        guard options.data != nil else { return Phrase.said("The operation needs data") }
        return nil
    }

    /// The right, or the RESULT that says why not.
    private func load(user: String, identifier: String) -> Result<StoredRight, ResultBox> {
        do {
            switch try parts.store.loadRight(identifier: identifier, user: user) {
            case .absent: return .failure(ResultBox(Answer(.notFound, RightMessages.notFound)))
            case .ok(let right): return .success(right)
            case .corrupt(let why):
                parts.audit.notice("a right of \(user) is unreadable: \(why)")
                return .failure(ResultBox(Answer(.internalError, RightMessages.unreadable)))
            }
        } catch {
            parts.audit.notice("cannot read a right of \(user): \(error)")
            return .failure(ResultBox(Answer(.internalError, RightMessages.unreadable)))
        }
    }

    private func publicFacts(_ right: StoredRight) -> Answer.Payload {
        .right(
            requirement: Self.wire(right.requirement), publicKey: try? RightKeys.publicKey(ofPrivate: right.privateKey))
    }

    static func stored(_ requirement: RightRequirement) -> StoredRight.Requirement {
        switch requirement {
        case .biometryAny: .biometryAny
        case .biometryCurrentSet: .biometryCurrentSet
        case .biometryOrPasscode: .biometryOrPasscode
        case .devicePasscode: .passcode
        }
    }

    static func wire(_ requirement: StoredRight.Requirement) -> RightRequirement {
        switch requirement {
        case .biometryAny: .biometryAny
        case .biometryCurrentSet: .biometryCurrentSet
        case .biometryOrPasscode: .biometryOrPasscode
        case .passcode: .devicePasscode
        }
    }
}

/// A RESULT as a failure value.
struct ResultBox: Error {
    let result: Answer
    init(_ result: Answer) { self.result = result }
}

/// Every human line about rights, in one place.
enum RightMessages {
    static let badIdentifier = Phrase.said("A right's identifier must be 1 to 256 bytes")
    static let secretTooLarge = Phrase.said("A right's secret is at most 1024 bytes")
    static let stateUnreadable = Phrase.said("Stored authentication state is unreadable; ask an administrator")
    static let noSetToBindTo = Phrase.said("No fingerprint is enrolled: a right bound to the current set needs one")
    static let exists = Phrase.said("A right with this identifier exists already")
    static let cannotSave = Phrase.said("The daemon could not save the right")
    static let saved = Phrase.said("The right was saved")
    static let found = Phrase.said("The right exists")
    static let removed = Phrase.said("The right was removed")
    static let notFound = Phrase.said("No right with this identifier")
    static let invalidated = Phrase.said("The right was invalidated: the enrolled fingers changed")
    static let cannotRemove = Phrase.said("The daemon could not remove the right")
    static let unreadable = Phrase.said("The right is unreadable; ask an administrator")
    static let noSecret = Phrase.said("This right was saved without a secret")
    static let tooMany = Phrase.said(
        "An account has at most %s rights; remove one before saving another",
        .verbatim(String(StoredRight.maximumCount)))

    static func removedAll(_ count: Int) -> Phrase {
        Phrase.said("Rights removed: %s", .verbatim(String(count)))
    }

    static func used(_ operation: RightOperation) -> Phrase {
        switch operation {
        case .authorize: Phrase.said("The right is authorized")
        case .loadSecret: Phrase.said("The secret is released")
        case .sign: Phrase.said("Signed")
        case .decrypt: Phrase.said("Decrypted")
        case .exchangeKeys: Phrase.said("Keys exchanged")
        case .deauthorize: Phrase.said("The authorization is dropped")
        }
    }
}
