import Foundation
import LMDBKit
import Synchronization

/// Tells observers of this process that an import finished (the library's `importDidFinish` event), or that
/// an entry, or a whole import, failed.
final class ImportEvents: Sendable {
    private let observers = Mutex<[@Sendable (String) -> Void]>([])
    private let failureObservers = Mutex<[@Sendable (ImportFailure) -> Void]>([])

    func observe(_ observer: @escaping @Sendable (String) -> Void) { observers.withLock { $0.append(observer) } }

    func observeFailures(_ observer: @escaping @Sendable (ImportFailure) -> Void) {
        failureObservers.withLock { $0.append(observer) }
    }

    func post(_ domain: String) {
        for observer in observers.withLock({ $0 }) { observer(domain) }
    }

    func post(_ failure: ImportFailure) {
        for observer in failureObservers.withLock({ $0 }) { observer(failure) }
    }
}
