import ArgumentParser
import ChunkCache
import Foundation

/// The CLI's short names of the containers.
enum ContainerName {
    /// `root`, `workingSet` and `trash` name the containers wherever the CLI takes an item or a container
    /// (an item whose identifier is one of these words is not reachable by it there); anything else is an
    /// item identifier.
    static func identifier(_ name: String) -> String {
        switch name {
        case "root": return Item.rootContainer
        case "workingSet": return Item.workingSetContainer
        case "trash": return Item.trashContainer
        default: return name
        }
    }
}
