import CLMDB

/// Work a write transaction leaves for after its commit (``WriteTransaction/afterCommit(_:)``): what must not
/// happen unless the transaction's changes last, such as freeing what they stopped naming.
public protocol AfterCommit: AnyObject {
    /// Does the work, once, on the thread that committed, after a successful commit and outside any transaction:
    /// it may begin one in `environment`. Never runs when the transaction aborts.
    func run(_ environment: Environment)
}
