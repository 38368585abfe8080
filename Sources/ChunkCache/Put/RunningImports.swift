import Foundation
import Synchronization

/// The domains whose import a thread of this process runs now: one runner per job per process.
final class RunningImports: Sendable {
    private let domains = Mutex<Set<String>>([])

    /// Claims `domain`; false when a runner of this process has it.
    func claim(_ domain: String) -> Bool { domains.withLock { $0.insert(domain).inserted } }

    func release(_ domain: String) { _ = domains.withLock { $0.remove(domain) } }
}
