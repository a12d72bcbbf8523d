import Foundation
import OCDKit
import OpenCoreData
import OpenCoreDataPostgreSQL

/// `ocd`'s access to PostgreSQL stores (`postgres://user@host:port/database`,
/// with `?schema=name` for a schema other than `public`).
///
/// `ocd` installs it when built with the package's `PostgreSQL` trait; a program
/// of your own built on OCDKit installs it the same way, before running a command:
///
/// ```swift
/// import OCDKit
/// import OCDPostgreSQL
///
/// OCDPostgreSQL.install()
/// await OCD.runAsMain()
/// ```
///
/// A store opens read-only, with the model named by `--model` or the one cached in
/// the store's `Z_MODELCACHE`, and does not listen for other servers' changes (a
/// command reads once).
public enum OCDPostgreSQL {
    /// The opener of `postgres://` and `postgresql://` URLs.
    public static let opener = StoreURLOpener(schemes: ["postgres", "postgresql"], storeName: "PostgreSQL") { location, model in
        guard let url = URL(string: location) else { throw CoreDataError(.persistentStoreInvalidType, "Not a URL: \(location)") }
        let options = [PostgreSQLStore.Option.readOnly: "1", PostgreSQLStore.Option.remoteChanges: "0"]
        let model = try model ?? PostgreSQLStore.storedModel(at: url, options: options)
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: .postgreSQL, at: url, options: options)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        return (context, store)
    }

    /// Installs ``opener`` in `ocd`'s commands.
    public static func install() {
        OCD.install(opener)
    }
}
