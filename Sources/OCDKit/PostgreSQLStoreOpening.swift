import Foundation
import OpenCoreData
#if OCD_POSTGRESQL
import OpenCoreDataPostgreSQL
#endif

/// Opens a PostgreSQL store read-only for `ocd`, named by its URL
/// (`postgres://user@host:port/database?schema=name`), with `modelPath` or the
/// model cached in the store's `Z_MODELCACHE`. The store does not listen for
/// other servers' changes (a command reads once).
func openPostgreSQLStore(_ path: String, modelPath: String?) throws -> (ManagedObjectContext, any PersistentStore) {
    #if OCD_POSTGRESQL
    guard let url = URL(string: path) else { throw CommandFailure("Not a URL: \(path)") }
    let options = [PostgreSQLStore.Option.readOnly: "1", PostgreSQLStore.Option.remoteChanges: "0"]
    let model = try modelPath.map(loadModel) ?? PostgreSQLStore.storedModel(at: url, options: options)
    let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
    let store = try coordinator.addPersistentStore(type: .postgreSQL, at: url, options: options)
    let context = ManagedObjectContext(concurrencyType: .mainQueue)
    context.persistentStoreCoordinator = coordinator
    return (context, store)
    #else
    throw CommandFailure("This ocd was built without the PostgreSQL store (OCD_WITHOUT_POSTGRESQL): it can't open \(path)")
    #endif
}
