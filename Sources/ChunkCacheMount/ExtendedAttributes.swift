import ChunkCache
import FileIO
import FuseKit

/// The extended attributes a mount shows on each file (CONTRACT §13): what the store holds of it, and a pin
/// switch.
enum ExtendedAttribute: String, CaseIterable {
    /// `dataless`, `partial`, `cached` or `pinned`.
    case state = "user.chunkcache.state"
    /// The content version the file shows.
    case version = "user.chunkcache.version"
    /// Bytes of that version the store holds.
    case cachedBytes = "user.chunkcache.cachedBytes"
    /// Set to `1` to pin the file (its bytes are downloaded and kept), `0` to unpin it; never read.
    case pin = "user.chunkcache.pin"

    /// The only namespace the mount has: no ACLs (`system.`), security labels (`security.`) or `trusted.`.
    static let namespace = "user."

    /// The names `listxattr` gives: those that can be read.
    static let listed = [state, version, cachedBytes]

    /// The attribute's value for `status`.
    func value(of status: ItemStatus) -> String? {
        let item = status.item
        switch self {
        case .state:
            if item.isPinned { return "pinned" }
            if status.cachedBytes >= item.documentSize { return "cached" }
            return status.cachedBytes == 0 ? "dataless" : "partial"
        case .version: return String(decoding: item.itemVersion.contentVersion, as: UTF8.self)
        case .cachedBytes: return String(status.cachedBytes)
        case .pin: return nil
        }
    }
}

extension MountedDomain {
    public func extendedAttribute(_ request: FuseRequest, node: UInt64, name: String, size: Int) {
        // `ls -l` asks every file for its ACL (`system.posix_acl_access`) and security label
        // (`security.selinux`). The mount has neither kind: EOPNOTSUPP, unlike ENODATA, tells `ls` so, and
        // it stops asking for the rest of the file system (coreutils caches an unsupported device), where
        // ENODATA cost a round trip per file and name. Other `user.` names simply do not exist.
        guard name.hasPrefix(ExtendedAttribute.namespace) else { return request.fail(.notSupported) }
        guard let attribute = ExtendedAttribute(rawValue: name), attribute != .pin else { return request.fail(.noData) }
        do {
            let status = try self.status(of: node)
            guard status.item.kind == .file, let value = attribute.value(of: status) else {
                return request.fail(.noData)
            }
            Self.reply(request, with: Array(value.utf8), size: size)
        } catch {
            request.fail(error.mountErrno)
        }
    }

    public func extendedAttributeNames(_ request: FuseRequest, node: UInt64, size: Int) {
        do {
            let isFile = try status(of: node).item.kind == .file
            let names: [UInt8] = isFile ? ExtendedAttribute.listed.flatMap { Array($0.rawValue.utf8) + [0] } : []
            Self.reply(request, with: names, size: size)
        } catch {
            request.fail(error.mountErrno)
        }
    }

    /// Pins (`1`) or unpins (`0`) the file: in a task, since a pin downloads the file; the request is
    /// answered when it is done.
    public func setExtendedAttribute(_ request: FuseRequest, node: UInt64, name: String, value: UnsafeRawBufferPointer)
    {
        guard name == ExtendedAttribute.pin.rawValue else {
            return request.fail(ExtendedAttribute(rawValue: name) == nil ? .notSupported : .permissionDenied)
        }
        let text = String(decoding: value, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text == "1" || text == "0" else { return request.fail(.invalidArgument) }
        guard let identifier = nodes[node]?.identifier, node != NodeTable.root else { return request.fail(.noSuchFile) }
        let item = ItemIdentifier(domain: domain, identifier)
        Task { [cache] in
            do {
                if text == "1" { _ = try await cache.pin(item) } else { _ = try await cache.unpin(item) }
                request.succeed()
            } catch {
                request.fail(error.mountErrno)
            }
        }
    }

    /// Answers a `GETXATTR` or `LISTXATTR`: the length when asked with size 0, `ERANGE` when `size` is too
    /// small, else the bytes.
    private static func reply(_ request: FuseRequest, with bytes: [UInt8], size: Int) {
        if size == 0 { return request.reply(attributeSize: bytes.count) }
        guard bytes.count <= size else { return request.fail(.resultTooLarge) }
        bytes.withUnsafeBytes { request.reply(bytes: $0) }
    }
}
