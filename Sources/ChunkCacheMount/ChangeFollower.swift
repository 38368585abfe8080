import ChunkCache
import Dispatch
import FuseKit

/// Follows the domain's change log, whoever writes it (`put`, `mv`, `rm`, `mark`, `domain sync`, another
/// mount), and tells the kernel exactly what changed (CONTRACT §13): of an item whose content and place are
/// the same (a last-use note, a mark, a pin), only its attributes; of one moved, renamed, replaced, added or
/// removed, the name it was seen under, the name it has now (which may be cached as absent), its attributes
/// and its folders' listings. That is what lets the kernel keep names, attributes and pages for a day
/// (``MountedDomain/timeout``).
final class ChangeFollower: Sendable {
    private let mounted: MountedDomain
    private let session: FuseSession
    /// Invalidations are system calls that wait for the kernel: they run on this queue, off the tasks'
    /// threads, in order.
    private let notifier = DispatchQueue(label: "chunkcache-mount-invalidate")

    init(_ mounted: MountedDomain, session: FuseSession) {
        self.mounted = mounted
        self.session = session
    }

    /// Follows changes until the task is cancelled. Each wait is woken by any commit to the store (no
    /// polling); a wait that times out just waits again.
    func run() async throws {
        let all = try await mounted.cache.enumeratorOfAllItems(in: mounted.domain)
        var anchor = try await all.currentSyncAnchor()
        while !Task.isCancelled {
            guard try await all.waitForChanges(after: anchor, timeout: .seconds(3600)) else { continue }
            var batch: ChangeBatch
            repeat {
                batch = try await all.enumerateChanges(from: anchor, suggestedBatchSize: 1000)
                apply(batch)
                anchor = batch.nextAnchor
            } while batch.moreComing
        }
    }

    private func apply(_ batch: ChangeBatch) {
        let nodes = mounted.nodes
        var work: [@Sendable () -> Void] = []
        for item in batch.updated {
            let parent =
                item.parentIdentifier == Item.rootContainer
                ? NodeTable.root : nodes.current(item.parentIdentifier)?.number
            let known = nodes.changed(item.identifier, to: item)
            if let known, known.contentVersion == item.itemVersion.contentVersion, known.parent == parent,
                known.name == item.filename
            {
                // Same content at the same name (a last-use note, a mark, a pin): only its attributes changed.
                // Dropping its name would drop the node with its pages (the kernel deletes a FUSE inode
                // nobody holds), and its next lookup would read it all again.
                work.append { [session] in session.invalidate(node: known.number, data: false) }
                continue
            }
            if let known {
                // Moved, renamed or a new version: the old name goes. A new version gets a new node at its next
                // lookup; the old node keeps its pages for the files open on it.
                work.append { [session] in
                    session.invalidateEntry(parent: known.parent, name: known.name)
                    session.invalidate(node: known.number, data: false)
                    session.invalidate(node: known.parent, data: true)
                }
            }
            // Where it is listed now: the kernel may hold that name as absent, and the folder's listing.
            if let parent {
                work.append { [session] in
                    session.invalidateEntry(parent: parent, name: item.filename)
                    session.invalidate(node: parent, data: true)
                }
            }
        }
        for identifier in batch.deleted {
            guard let known = nodes.changed(identifier, to: nil) else { continue }
            work.append { [session] in
                session.invalidateEntry(parent: known.parent, name: known.name)
                session.invalidate(node: known.parent, data: true)
            }
        }
        guard !work.isEmpty else { return }
        notifier.async { [work] in
            for invalidation in work { invalidation() }
        }
    }
}
