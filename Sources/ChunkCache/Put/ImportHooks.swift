import FileIO
import Foundation

/// Points inside an import where tests act between its steps, so races are reproduced without sleeps.
struct ImportHooks: Sendable {
    /// Runs after the walk, before any file is read, with the tree's root.
    var afterWalk: @Sendable (String) -> Void = { _ in }
    /// Runs once the new domain exists and the directory is the store's, before the import is handed back
    /// and any file is taken in; a throw undoes the import (the directory goes back).
    var domainCreated: @Sendable () throws -> Void = {}
}
