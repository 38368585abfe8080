// What the catalogue reads in an item's placement: the containers that list it, and whether it belongs in the
// working set.

extension Placement {
    /// Whether the item is in `container` when placed so.
    func isListed(in container: EnumeratedContainer) -> Bool {
        switch container {
        case .allItems: return true
        case .workingSet: return inWorkingSet
        case .folder(let identifier): return self.container == identifier
        }
    }
}

extension ItemRecord {
    /// Recomputes working-set membership (<doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>):
    /// recent, tagged, favorite, shared, trashed and pinned items, except those inside a trashed folder
    /// (<doc:FileProviderRules#F11>).
    mutating func refreshWorkingSet(now: Double) {
        let recent = lastUsedDate.map { $0 >= now - RecentItems.window } ?? false
        let member =
            !flags.contains(.inTrashedFolder)
            && (recent || !tagData.isEmpty || favoriteRank != nil
                || !flags.isDisjoint(with: [.shared, .trashed, .pinned]))
        if member { flags.insert(.inWorkingSet) } else { flags.remove(.inWorkingSet) }
    }
}
