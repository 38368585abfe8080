/// Who hears of the writer's commits that logged a change
/// (<doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>): the engine's change signal.
protocol CommitSignal: AnyObject, Sendable {
    /// Forgets the mark of a transaction that did not commit; called before each transaction.
    func clearMark()
    /// After a commit: wakes the waiters when the transaction marked a change.
    func postIfMarked()
}
