import ChunkCache
import Synchronization

/// The node numbers the kernel knows a domain's items by, and how many lookups of each it holds.
///
/// A node is an item at one content version, and its number is made from the two (a hash of the item's
/// identifier and content version): the same item at the same content keeps its number through moves,
/// renames and metadata changes, after the kernel forgot the node and looked it up again, and from one mount
/// to the next, so programs that key files by inode number (`git`, `rsync`, `tail -F`, backups) see the same
/// file (CONTRACT §13). When a file's content changes, its next lookup gets the new version's node: the
/// kernel caches pages by node, so the pages of the old version stay with the old node, which files opened
/// before the change keep reading (an open file never mixes versions), and the new node starts with none.
///
/// Node 1 is the root folder. A node is dropped when the kernel forgets its last lookup (`FORGET`). Each
/// node remembers where the kernel last saw it (folder and name), so a change can tell the kernel to forget
/// that name.
final class NodeTable: Sendable {
    /// The root's node number, FUSE's `FUSE_ROOT_ID`.
    static let root: UInt64 = 1
    /// The bits a node number may use: 53, which a double holds exactly.
    static let numbers: UInt64 = (1 << 53) - 1

    struct Node: Sendable {
        let number: UInt64
        let identifier: String
        /// The content version the node shows (empty for folders and links) and its size.
        let contentVersion: [UInt8]
        let size: Int64
        var parent: UInt64
        var name: String
        var lookups: UInt64
    }

    private struct State {
        var nodes: [UInt64: Node] = [:]
        /// The node of each item's current version.
        var current: [String: UInt64] = [:]
    }

    private let state = Mutex(State())

    init() {
        state.withLock { state in
            state.nodes[Self.root] = Node(
                number: Self.root, identifier: Item.rootContainer, contentVersion: [], size: 0, parent: Self.root,
                name: "", lookups: 1)
            state.current[Item.rootContainer] = Self.root
        }
    }

    /// The node, while the kernel knows it.
    subscript(number: UInt64) -> Node? { state.withLock { $0.nodes[number] } }

    /// The node of the item's current version, when the kernel knows it.
    func current(_ identifier: String) -> Node? {
        state.withLock { state in state.current[identifier].flatMap { state.nodes[$0] } }
    }

    /// The node of `item` at its version, found under `name` in `parent`, counting one more lookup by the
    /// kernel (a `LOOKUP` answer or a `READDIRPLUS` entry).
    func lookedUp(_ item: Item, in parent: UInt64, as name: String) -> UInt64 {
        if item.identifier == Item.rootContainer { return Self.root }
        let version = item.itemVersion.contentVersion
        return state.withLock { state in
            var number = Self.number(of: item.identifier, at: version)
            // Another item with the same hash while the kernel knows it (rare as two equal random 53-bit
            // numbers) takes the next free number.
            while let known = state.nodes[number],
                known.identifier != item.identifier || known.contentVersion != version
            {
                number = max((number + 1) & Self.numbers, 2)
            }
            if state.nodes[number] != nil {
                state.nodes[number]!.lookups += 1
                state.nodes[number]!.parent = parent
                state.nodes[number]!.name = name
            } else {
                state.nodes[number] = Node(
                    number: number, identifier: item.identifier, contentVersion: version, size: item.documentSize,
                    parent: parent, name: name, lookups: 1)
            }
            state.current[item.identifier] = number
            return number
        }
    }

    /// The number of an item at a content version: FNV-1a of the identifier and the version, past the root's,
    /// in 53 bits, which a double holds exactly (JavaScript's numbers: editors' file watchers key by it).
    static func number(of identifier: String, at contentVersion: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        for byte in identifier.utf8 { mix(byte) }
        mix(0)
        for byte in contentVersion { mix(byte) }
        return max(hash & Self.numbers, 2)
    }

    /// Records a change to the item (`nil`: deleted): a node of an older version is no longer the item's
    /// current one. Returns the node the kernel knew, or `nil` when it knew none.
    func changed(_ identifier: String, to item: Item?) -> Node? {
        state.withLock { state in
            guard let number = state.current[identifier], let node = state.nodes[number] else { return nil }
            if item.map({ $0.itemVersion.contentVersion != node.contentVersion }) ?? true {
                state.current[identifier] = nil
            }
            return node
        }
    }

    /// The kernel dropped `count` lookups of `node`.
    func forget(_ node: UInt64, lookups count: UInt64) {
        guard node != Self.root else { return }
        state.withLock { state in
            guard var entry = state.nodes[node] else { return }
            entry.lookups -= min(count, entry.lookups)
            if entry.lookups == 0 {
                state.nodes[node] = nil
                if state.current[entry.identifier] == node { state.current[entry.identifier] = nil }
            } else {
                state.nodes[node] = entry
            }
        }
    }

}
