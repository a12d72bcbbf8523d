import OCDKit

await OCD.runAsMain()
