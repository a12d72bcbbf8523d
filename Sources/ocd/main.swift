import OCDKit

OCD.main()
